package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
	"capsuled/internal/store/postgres"
	"capsuled/internal/storetest"
)

// randUnit is a random unit vector.
func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

// clustered returns random unit vectors around 32 random centres, as
// embeddings of texts on a few topics are (uniformly random vectors in 384
// dimensions all lie about as far from each other, which no text does).
func clustered(r *rand.Rand, dim int) func() []float32 {
	centres := make([][]float32, 32)
	for i := range centres {
		centres[i] = randUnit(r, dim)
	}
	return func() []float32 {
		c, n := centres[r.IntN(len(centres))], randUnit(r, dim)
		v := make([]float32, dim)
		var norm float64
		for i := range v {
			v[i] = c[i] + 0.7*n[i]
			norm += float64(v[i]) * float64(v[i])
		}
		for i := range v {
			v[i] /= float32(math.Sqrt(norm))
		}
		return v
	}
}

// denseItem is one searchable item of a dense test capsule.
type denseItem struct {
	item domain.Item
	vecs [][]float32
}

// fillDense creates the capsule with items of per chunks each, random
// vectors of dim dimensions, item i's metadata meta(i).
func fillDense(t *testing.T, st *postgres.CapsuleStore, vec func() []float32, capsule string, items, per int, meta func(i int) map[string]any) []denseItem {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: capsule, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	var out []denseItem
	for i := range items {
		id := fmt.Sprintf("itm_%s_%03d", capsule, i)
		at := t0.Add(time.Duration(i) * time.Hour)
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: capsule, Kind: domain.ItemText, URI: fmt.Sprintf("doc://%d", i),
			ContentHash: "h" + id, FileType: []string{"txt", "TXT", "md"}[i%3], Metadata: meta(i), TimeAdded: at, TimeAuthored: &at, TimeUpdated: at}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StartItem(ctx, id, "h"+id, t0); err != nil {
			t.Fatal(err)
		}
		d := denseItem{}
		var chunks []domain.Chunk
		for j := range per {
			v := vec()
			d.vecs = append(d.vecs, v)
			chunks = append(chunks, domain.Chunk{Idx: j, Text: "chunk", Vector: v})
		}
		it, err := st.CompleteItem(ctx, id, "h"+id, "text", chunks, t0)
		if err != nil {
			t.Fatal(err)
		}
		d.item = it
		out = append(out, d)
	}
	return out
}

// exactTop is the exact top k of the items pred accepts, best first.
func exactTop(items []denseItem, q []float32, k int, pred retrieval.Predicate) []retrieval.Match {
	var all []retrieval.Match
	for _, d := range items {
		if pred != nil && !pred(&d.item) {
			continue
		}
		for j, v := range d.vecs {
			var s float64
			for x := range v {
				s += float64(v[x]) * float64(q[x])
			}
			all = append(all, retrieval.Match{ItemID: d.item.ID, Idx: j, Cosine: s})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Cosine > all[j].Cosine })
	return all[:min(k, len(all))]
}

// recall is the share of want's chunks in got; it also checks got's
// cosines against the exact ones.
func recall(t *testing.T, items []denseItem, q []float32, got, want []retrieval.Match) float64 {
	t.Helper()
	vec := map[string][]float32{}
	for _, d := range items {
		for j, v := range d.vecs {
			vec[fmt.Sprintf("%s/%d", d.item.ID, j)] = v
		}
	}
	in := map[string]bool{}
	for _, m := range got {
		key := fmt.Sprintf("%s/%d", m.ItemID, m.Idx)
		in[key] = true
		v := vec[key]
		var s float64
		for x := range v {
			s += float64(v[x]) * float64(q[x])
		}
		if math.Abs(s-m.Cosine) > 1e-5 {
			t.Errorf("%s: cosine %v, exact %v", key, m.Cosine, s)
		}
	}
	n := 0
	for _, m := range want {
		if in[fmt.Sprintf("%s/%d", m.ItemID, m.Idx)] {
			n++
		}
	}
	return float64(n) / float64(max(len(want), 1))
}

// TestDenseTopKHNSW searches 384-dimensional vectors through the HNSW index
// in a capsule beside another one: unfiltered, with a filter that 5% of the
// capsule's chunks pass (the index's iterative scan still returns k), and
// with one that fewer than k pass (all of them, exactly).
func TestDenseTopKHNSW(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openFresh(t, postgres.Options{}).Capsules()
	r := rand.New(rand.NewPCG(1, 2))
	group := func(i int) map[string]any { return map[string]any{"group": float64(i % 20)} }
	vec := clustered(r, 384)
	items := fillDense(t, st, vec, "big", 40, 50, group)
	fillDense(t, st, vec, "other", 30, 50, group)

	for _, tc := range []struct {
		name string
		k    int
		w    domain.Wishlist
		want int // results expected
	}{
		{"unfiltered", 20, domain.Wishlist{}, 20},
		{"5% filter", 60, domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "group", Op: domain.OpEq, Value: 3.0}}}, 60},
		{"one item", 60, domain.Wishlist{ItemIDs: []string{"itm_big_007"}}, 50},
		{"none", 10, domain.Wishlist{ItemIDs: []string{"itm_other_007"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worst := 1.0
			for range 5 {
				q := vec()
				got, err := st.DenseTopK(ctx, "big", q, tc.k, tc.w)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != tc.want {
					t.Fatalf("%d results, want %d", len(got), tc.want)
				}
				pred := retrieval.Compile(tc.w)
				byID := map[string]*domain.Item{}
				for i := range items {
					byID[items[i].item.ID] = &items[i].item
				}
				for _, m := range got {
					it := byID[m.ItemID]
					if it == nil || (pred != nil && !pred(it)) {
						t.Fatalf("%s/%d does not pass the filter", m.ItemID, m.Idx)
					}
				}
				if tc.want > 0 {
					worst = min(worst, recall(t, items, q, got, exactTop(items, q, tc.k, pred)))
				}
			}
			if worst < 0.9 {
				t.Errorf("recall %.2f against exact search", worst)
			}
			t.Logf("worst recall %.2f", worst)
		})
	}
}

// TestEfSearchFloor checks the hnsw.ef_search floor's growth with the
// index (pgvector's beam must widen with the graph for the same recall),
// its fall with the graph's m, and the per-query setting built on it: the largest of the floor, twice
// the candidates and the server's setting, at most 1,000.
func TestEfSearchFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	for _, tc := range []struct {
		rows float64
		m    int // 0: the index's definition names none (pgvector's 16)
		want int
	}{{-1, 0, 200}, {0, 0, 200}, {12098, 0, 200}, {125000, 16, 200}, {200000, 0, 274}, {1e6, 0, 800}, {2e6, 16, 1270},
		{200000, 24, 200}, {1e6, 24, 356}, {2e6, 32, 317}, {1e6, 8, 3200}} {
		var m any
		if tc.m != 0 {
			m = tc.m
		}
		var got int
		if err := db.Pool().QueryRow(ctx, "SELECT "+postgres.EfSearchFloor("$1::float8", "$2::int"), tc.rows, m).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("floor at %.0f rows, m %d: %d, want %d", tc.rows, tc.m, got, tc.want)
		}
	}
	// The index's m as its definition names it, then the one an ALTER
	// INDEX (as a rebuild by SetHNSW) writes into it.
	for _, want := range []int{16, 24} {
		if want == 24 {
			if _, err := db.Pool().Exec(ctx, "ALTER INDEX chunks_hnsw SET (m = 24)"); err != nil {
				t.Fatal(err)
			}
		}
		var m *int
		if err := db.Pool().QueryRow(ctx, "SELECT "+postgres.HNSWM).Scan(&m); err != nil {
			t.Fatal(err)
		}
		if m == nil || *m != want {
			t.Errorf("index m %v, want %d", m, want)
		}
	}
	// The statement in a transaction, on the fresh schema's empty index.
	for _, tc := range []struct {
		twoK   int
		server string // the session's hnsw.ef_search, "" for pgvector's default
		want   string
	}{{20, "", "200"}, {200, "", "200"}, {600, "", "600"}, {5000, "", "1000"}, {20, "500", "500"}} {
		tx, err := db.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after the Rollback below; on a failure it frees the connection
		if tc.server != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL hnsw.ef_search = "+tc.server); err != nil {
				t.Fatal(err)
			}
		}
		var ef, iter string
		if err := tx.QueryRow(ctx, postgres.EfSearchSettings, tc.twoK, 1000).Scan(&ef, &iter); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if ef != tc.want || iter != "relaxed_order" {
			t.Errorf("2k %d, server %q: ef_search %s, iterative_scan %s; want %s, relaxed_order", tc.twoK, tc.server, ef, iter, tc.want)
		}
	}
}

// TestItemFilterPushdown checks the SQL translation of every wishlist
// filter against retrieval.Compile: DenseTopK (scan path, all chunks)
// returns exactly the chunks of the items Compile accepts for the filters
// the database applies, and at least those for the ones left to the engine.
func TestItemFilterPushdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openFresh(t, postgres.Options{}).Capsules()
	r := rand.New(rand.NewPCG(3, 4))
	metas := []map[string]any{
		{"n": 1.0, "s": "apple", "b": true, "tags": []any{"red", "green"}, "when": "2024-01-02T00:00:00Z"},
		{"n": 2.5, "s": "banana", "b": false, "tags": []any{"yellow"}, "when": "2024-01-02T01:00:00+01:00"},
		{"n": -3.0, "s": "Éclair", "tags": []any{}, "nested": []any{[]any{1.0}}},
		{"n": "1", "s": 5.0, "b": "true", "tags": "red"},
		{"x": nil},
		{},
		{"n": []any{1.0, 7.0}, "s": []any{"apple", "kiwi"}},
		{"we\"ird $.key": "va\\l\"ue <&>", "ü @": []any{"\u2028", 1e21}},
	}
	items := fillDense(t, st, func() []float32 { return randUnit(r, 8) }, "f", len(metas), 2, func(i int) map[string]any { return metas[i] })
	t0 := items[0].item.TimeAdded
	at := func(h float64) *time.Time { x := t0.Add(time.Duration(h * float64(time.Hour))); return &x }
	mf := func(key string, op domain.MetadataOp, v any) domain.Wishlist {
		return domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: key, Op: op, Value: v}}}
	}
	for _, tc := range []struct {
		name  string
		w     domain.Wishlist
		exact bool
	}{
		{"kinds", domain.Wishlist{Kinds: []domain.ItemKind{domain.ItemText}}, true},
		{"kinds none", domain.Wishlist{Kinds: []domain.ItemKind{domain.ItemFile}}, true},
		{"file types", domain.Wishlist{FileTypes: []string{" TXT "}}, true},
		{"ids", domain.Wishlist{ItemIDs: []string{items[2].item.ID, "itm_nope"}}, true},
		{"uri prefix", domain.Wishlist{URIPrefix: "doc://1"}, true},
		{"uri prefix %", domain.Wishlist{URIPrefix: "doc://%"}, true},
		{"added after", domain.Wishlist{AddedAfter: at(2)}, true},
		{"added after ns", domain.Wishlist{AddedAfter: at(2 - 1e-13)}, true},
		{"added before", domain.Wishlist{AddedBefore: at(3)}, true},
		{"added before ns", domain.Wishlist{AddedBefore: at(3 + 1e-13)}, true},
		{"authored range", domain.Wishlist{AuthoredAfter: at(0.5), AuthoredBefore: at(4)}, true},
		{"exists", mf("n", domain.OpExists, true), true},
		{"exists null", mf("x", domain.OpExists, true), true},
		{"not exists", mf("n", domain.OpExists, false), true},
		{"eq number", mf("n", domain.OpEq, 1.0), true},
		{"eq int", mf("n", domain.OpEq, 1), true},
		{"eq string", mf("s", domain.OpEq, "apple"), true},
		{"eq bool", mf("b", domain.OpEq, true), true},
		{"eq array elem", mf("tags", domain.OpEq, "red"), true},
		{"eq nested", mf("nested", domain.OpEq, 1.0), true},
		{"eq odd key", mf("we\"ird $.key", domain.OpEq, "va\\l\"ue <&>"), true},
		{"in odd key", mf("ü @", domain.OpIn, []any{"\u2028", 1e21}), true},
		{"eq big number", mf("ü @", domain.OpEq, 1e21), true},
		{"ne number", mf("n", domain.OpNe, 1.0), true},
		{"ne string", mf("s", domain.OpNe, "apple"), true},
		{"in", mf("s", domain.OpIn, []any{"banana", 5.0, "kiwi"}), true},
		{"in empty", mf("s", domain.OpIn, []any{}), true},
		{"nin", mf("tags", domain.OpNin, []any{"red", "yellow"}), true},
		{"nin empty", mf("tags", domain.OpNin, []any{}), true},
		{"gt", mf("n", domain.OpGt, 1.0), true},
		{"gte", mf("n", domain.OpGte, 1.0), true},
		{"lt", mf("n", domain.OpLt, 2.5), true},
		{"lte string", mf("s", domain.OpLte, "banana"), true},
		{"gt string code points", mf("s", domain.OpGt, "z"), true},
		{"gt bool", mf("b", domain.OpGt, false), false},
		{"eq null", mf("x", domain.OpEq, nil), false},
		{"ne null", mf("x", domain.OpNe, nil), false},
		{"eq time", mf("when", domain.OpEq, "2024-01-02T00:00:00Z"), false},
		{"gte time", mf("when", domain.OpGte, "2024-01-01T23:30:00Z"), false},
		{"nin with null", mf("s", domain.OpNin, []any{"apple", nil}), false},
		{"two filters", domain.Wishlist{URIPrefix: "doc://", Metadata: []domain.MetadataFilter{
			{Key: "n", Op: domain.OpGte, Value: 0.0}, {Key: "s", Op: domain.OpNe, Value: "banana"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pred := retrieval.Compile(tc.w)
			want := map[string]bool{}
			for _, d := range items {
				if pred == nil || pred(&d.item) {
					want[d.item.ID] = true
				}
			}
			got := map[string]bool{}
			ms, err := st.DenseTopK(ctx, "f", randUnit(r, 8), 1000, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				got[m.ItemID] = true
			}
			for id := range want {
				if !got[id] {
					t.Errorf("%s passes the filter in Go, not in SQL", id)
				}
			}
			if tc.exact {
				for id := range got {
					if !want[id] {
						t.Errorf("%s passes the filter in SQL, not in Go", id)
					}
				}
			}
			// Keyword search lists a selective eq / in filter's items by the
			// lax jsonpath alone (laxItemFilter), which also unwraps an
			// element that is itself an array: a superset there, which the
			// engine checks. Everything else is as dense search's.
			laxMore := map[string]bool{"eq nested": true}[tc.name]
			var n int
			err = st.KeywordWhere(ctx, "f", []string{"chunk"}, 1000, tc.w, func(id string, _ int, _ float64) bool {
				if got[id] {
					n++
				} else if !laxMore || want[id] {
					t.Errorf("keyword: %s passes the filter, dense search left it out", id)
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(ms) {
				t.Errorf("keyword found %d of dense search's %d chunks", n, len(ms))
			}
		})
	}
}

// TestChunkLookups reads texts, cosines and items of chunks by id: in the
// order asked, found false for a chunk that does not exist, of another
// width, or of another capsule, and an error for lists of unequal lengths.
func TestChunkLookups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openFresh(t, postgres.Options{}).Capsules()
	r := rand.New(rand.NewPCG(5, 6))
	vec := func() []float32 { return randUnit(r, 8) }
	items := fillDense(t, st, vec, "a", 3, 2, func(int) map[string]any { return nil })
	fillDense(t, st, vec, "b", 1, 2, func(int) map[string]any { return nil })
	ids := []string{items[2].item.ID, items[0].item.ID, "itm_nope", items[0].item.ID, "itm_b_000"}
	idxs := []int{1, 0, 0, 7, 0}
	texts, found, err := st.ChunkTexts(ctx, ids, idxs)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(texts, found) != "[chunk chunk   chunk] [true true false false true]" {
		t.Fatalf("texts %q found %v", texts, found)
	}
	q := vec()
	cos, found, err := st.ChunkCosines(ctx, "a", q, ids, idxs)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(found) != "[true true false false false]" {
		t.Fatalf("cosines found %v", found)
	}
	for i, c := range cos[:2] {
		want := exactTop(items[map[int]int{0: 2, 1: 0}[i]:][:1], q, 2, nil)
		ok := false
		for _, m := range want {
			ok = ok || (m.Idx == idxs[i] && math.Abs(m.Cosine-c) < 1e-5)
		}
		if !ok {
			t.Errorf("chunk %s/%d: cosine %v, exact %v", ids[i], idxs[i], c, want)
		}
	}
	if _, found, err = st.ChunkCosines(ctx, "a", randUnit(r, 16), ids, idxs); err != nil || fmt.Sprint(found) != "[false false false false false]" {
		t.Fatalf("another width: %v %v", found, err)
	}
	its, err := st.ItemsByID(ctx, "a", ids)
	if err != nil || len(its) != 2 {
		t.Fatalf("items by id: %v %v", its, err)
	}
	if _, _, err := st.ChunkTexts(ctx, ids, idxs[:2]); err == nil {
		t.Error("chunk texts: no error for lists of unequal lengths")
	}
	if _, _, err := st.ChunkCosines(ctx, "a", q, ids, idxs[:2]); err == nil {
		t.Error("chunk cosines: no error for lists of unequal lengths")
	}
}

func TestStoreSearcher(t *testing.T) {
	t.Parallel()
	for _, ft := range []postgres.FullText{postgres.FullTextAuto, postgres.FullTextTSVector} {
		t.Run("fulltext="+string(ft), func(t *testing.T) {
			t.Parallel()
			storetest.StoreSearcher(t, func(t *testing.T) capsule.Store { return openFresh(t, postgres.Options{FullText: ft}).Capsules() })
		})
	}
}

package retrieval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
)

// naiveTopK is the reference: every chunk scored, sorted, cut.
func naiveTopK(ci *capIndex, q []float32, dim, k int, pred Predicate) []ref {
	type s struct {
		r ref
		v float32
	}
	var all []s
	for _, en := range ci.items {
		if pred != nil && !pred(&en.item) {
			continue
		}
		for i, idx := range en.idxs {
			all = append(all, s{ref{en.item.ID, idx}, vecmath.Dot(q, en.vecs[i*dim:(i+1)*dim])})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return refLess(all[i].r, all[j].r)
	})
	out := []ref{}
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.r)
	}
	return out
}

func TestDenseTopK(t *testing.T) {
	t.Parallel()
	// 20,000 chunks: enough for two workers on two cores.
	src := newFakeSource(400, 50, 64, 50)
	qs := src.queries(20)
	shard3 := Compile(domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}})
	ctx := context.Background()
	exact := New(src, nil, 64, Config{ApproxMin: -1})
	exact.emb = fixedEmbedder{qs[0]} // load vectors
	ci, err := exact.load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		k    int
		pred Predicate
	}{{"k=10", 10, nil}, {"k=100", 100, nil}, {"filtered", 10, shard3}, {"k beyond the capsule", 30000, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			for qi, q := range qs[:5] {
				want := naiveTopK(ci, q, 64, tc.k, tc.pred)
				got := denseTopK(ci, q, 64, tc.k, tc.pred, -1, 0)
				if len(got) != len(want) {
					t.Fatalf("query %d: %d results, want %d", qi, len(got), len(want))
				}
				for i := range want {
					if got[i].ref != want[i] {
						t.Fatalf("query %d, rank %d: %v, want %v", qi, i, got[i].ref, want[i])
					}
				}
			}
		})
	}
	// Ties break by item id then idx: the same vector everywhere.
	t.Run("ties", func(t *testing.T) {
		same := &capIndex{items: map[string]*entry{}}
		for _, id := range []string{"b", "a", "c"} {
			same.items[id] = &entry{item: domain.Item{ID: id}, idxs: []int{1, 0}, vecs: []float32{1, 0, 1, 0}}
			same.chunks += 2
		}
		got := denseTopK(same, []float32{1, 0}, 2, 3, nil, -1, 0)
		want := []ref{{"a", 0}, {"a", 1}, {"b", 0}}
		for i := range want {
			if got[i].ref != want[i] {
				t.Fatalf("rank %d: %v, want %v", i, got[i].ref, want[i])
			}
		}
	})
}

func TestApproxRecall(t *testing.T) {
	t.Parallel()
	src := newFakeSource(400, 50, 384, 200)
	qs := src.queries(20)
	exact := New(src, fixedEmbedder{qs[0]}, 384, Config{ApproxMin: -1})
	approx := New(src, fixedEmbedder{qs[0]}, 384, Config{ApproxMin: 1, ApproxRerank: 500})
	shard3 := Compile(domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}})
	for _, tc := range []struct {
		name string
		pred Predicate
	}{{"all", nil}, {"filtered", shard3}} {
		if r := recallAt10(t, exact, approx, qs, tc.pred); r < 0.9 {
			t.Errorf("%s: recall@10 %.3f, want ≥ 0.9", tc.name, r)
		}
	}
	// A filter that leaves fewer chunks than the rerank size is exact.
	one := Compile(domain.Wishlist{ItemIDs: []string{"itm_000007"}})
	if r := recallAt10(t, exact, approx, qs, one); r != 1 {
		t.Errorf("selective filter: recall@10 %.3f, want 1", r)
	}
}

// TestIncrementalIndex changes a loaded capsule item by item (new items
// between existing ids, replaced vectors, an item left without vectors,
// removals) and checks after each change that the scan list kept in place
// is the one a rebuild would make, that its worker spans still cover it,
// and that exact and approximate scans still agree with the reference.
func TestIncrementalIndex(t *testing.T) {
	t.Parallel()
	const dim = 64
	src := newFakeSource(500, 40, dim, 50) // 20,000 chunks: two workers' spans
	qs := src.queries(5)
	ctx := context.Background()
	e := New(src, fixedEmbedder{qs[0]}, dim, Config{ApproxMin: 1})
	ci, err := e.load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	ci.snapshot() // built: from now on it is changed in place
	r := rand.New(rand.NewPCG(1, 2))
	cs := src.centres()
	vecs := func(n int) []domain.Chunk {
		out := make([]domain.Chunk, n)
		for i := range out {
			out[i] = domain.Chunk{Idx: i, Vector: clustered(r, cs, dim)}
		}
		return out
	}
	item := func(id string) domain.Item {
		return domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText, Metadata: map[string]any{"shard": float64(r.IntN(10))}}
	}
	for step := range 200 {
		switch step % 5 {
		case 0, 1: // a new item between existing ids
			e.ItemIndexed(item(fmt.Sprintf("itm_%06d_%d", r.IntN(600), step)), vecs(1+r.IntN(60)))
		case 2: // an existing item's chunks replaced
			e.ItemIndexed(item(fmt.Sprintf("itm_%06d", r.IntN(500))), vecs(1+r.IntN(60)))
		case 3: // an item left without vectors, then one removed
			e.ItemIndexed(item(fmt.Sprintf("itm_%06d", r.IntN(500))), nil)
			e.ItemRemoved("c", fmt.Sprintf("itm_%06d", r.IntN(500)))
		case 4: // a new item at either end
			e.ItemIndexed(item(fmt.Sprintf("itm_%06d", 1000+step)), vecs(3))
			e.ItemIndexed(item(fmt.Sprintf("a_%06d", step)), vecs(3))
		}
		ci.mu.RLock()
		ci.snapMu.Lock()
		kept := ci.list != nil
		ci.snapMu.Unlock()
		if !kept {
			t.Fatalf("step %d: the change dropped the scan list (rebuilt from every item on the next query)", step)
		}
		list, spans := ci.snapshot()
		var want []*entry
		for _, en := range ci.items {
			if len(en.idxs) > 0 {
				want = append(want, en)
			}
		}
		slices.SortFunc(want, func(a, b *entry) int { return strings.Compare(a.item.ID, b.item.ID) })
		if !slices.Equal(list, want) {
			t.Fatalf("step %d: the list kept in place differs from a rebuilt one (%d vs %d entries)", step, len(list), len(want))
		}
		if len(spans) != ci.workers() || spans[0].from != 0 || spans[len(spans)-1].to != len(list) {
			t.Fatalf("step %d: spans %v over %d entries", step, spans, len(list))
		}
		for i := 1; i < len(spans); i++ {
			if spans[i].from != spans[i-1].to {
				t.Fatalf("step %d: spans %v leave a gap", step, spans)
			}
		}
		if step%20 == 19 {
			for _, q := range qs {
				want := naiveTopK(ci, q, dim, 10, nil)
				var got []ref
				for _, c := range denseTopK(ci, q, dim, 10, nil, -1, 0) {
					got = append(got, c.ref)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: exact scan %v, want %v", step, got, want)
				}
				if len(denseTopK(ci, q, dim, 10, nil, 1, 1000)) != 10 {
					t.Fatalf("step %d: approximate scan short", step)
				}
			}
		}
		ci.mu.RUnlock()
	}
}

// listFrom, given the Source's items in id order, sets the snapshot that
// snapshot would sort; given them in another order, leaves it to
// snapshot.
func TestListFromItems(t *testing.T) {
	mk := func(ids ...string) (*capIndex, []domain.Item) {
		ci := &capIndex{items: map[string]*entry{}}
		var items []domain.Item
		for i, id := range ids {
			it := domain.Item{ID: id}
			items = append(items, it)
			en := &entry{item: it}
			if i%4 != 1 { // every fourth item has no vectors
				en.idxs, en.vecs = []int{0, 1}[:1+i%2], make([]float32, 2*(1+i%2))
				ci.chunks += len(en.idxs)
			}
			ci.items[id] = en
		}
		return ci, items
	}
	ids := func(list []*entry) []string {
		var out []string
		for _, en := range list {
			out = append(out, en.item.ID)
		}
		return out
	}
	sorted := []string{"a", "b", "c", "d", "e", "f", "g"}
	ci, items := mk(sorted...)
	ci.listFrom(items)
	if ci.list == nil {
		t.Fatal("items in id order: no snapshot set")
	}
	got, gotSpans := ids(ci.list), ci.spans
	ci.invalidate()
	want, wantSpans := ci.snapshot()
	if !slices.Equal(got, ids(want)) || !slices.Equal(gotSpans, wantSpans) {
		t.Fatalf("listFrom %v %v, snapshot %v %v", got, gotSpans, ids(want), wantSpans)
	}
	ci, items = mk("c", "a", "b")
	ci.listFrom(items)
	if ci.list != nil {
		t.Fatal("items out of id order: a snapshot set without sorting")
	}
}

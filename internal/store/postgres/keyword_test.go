package postgres_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// startItem moves a queued item to indexing through whichever lifecycle
// call the store has (StartItem, by a job, or ClaimItem, by polling).
func startItem(ctx context.Context, st any, id, hash string, at time.Time) (domain.Item, error) {
	switch s := st.(type) {
	case interface {
		StartItem(ctx context.Context, id, hash string, at time.Time) (domain.Item, error)
	}:
		return s.StartItem(ctx, id, hash, at)
	case interface {
		ClaimItem(ctx context.Context, at time.Time) (domain.Item, error)
	}:
		return s.ClaimItem(ctx, at)
	}
	return domain.Item{}, fmt.Errorf("%T can start no item", st)
}

// addTextItem stores a text item of the capsule, with metadata meta (nil
// for none) and one chunk per text, through the store's lifecycle
// (PutItem, startItem, CompleteItem).
func addTextItem(tb testing.TB, st *postgres.CapsuleStore, capsule, id string, meta map[string]any, at time.Time, texts ...string) {
	tb.Helper()
	ctx := context.Background()
	hash := "h" + id
	if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: capsule, Kind: domain.ItemText, URI: id, ContentHash: hash,
		Metadata: meta, TimeAdded: at, TimeUpdated: at}); err != nil {
		tb.Fatal(err)
	}
	if _, err := startItem(ctx, st, id, hash, at); err != nil {
		tb.Fatal(err)
	}
	cs := make([]domain.Chunk, len(texts))
	for i, tx := range texts {
		cs[i] = domain.Chunk{Idx: i, Text: tx, End: len(tx)}
	}
	if _, err := st.CompleteItem(ctx, id, hash, strings.Join(texts, "\n"), cs, at); err != nil {
		tb.Fatal(err)
	}
}

// TestKeywordTopK checks that the BM25 keyword search, which reads the
// index's top-k in pages with the index's own scores, gives exactly the
// capsule's matches of scoring every chunk, with the same scores to float4
// precision while the index holds them in its memtable and within 2% once
// they are spilled to a segment (whose chunk lengths are quantised), best
// first, equal scores by item id and idx, for capsules interleaved with
// another one and across pages; and that it stops when told.
func TestKeywordTopK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	if db.FullText() != postgres.FullTextBM25 {
		t.Skip("the test server has no pg_textsearch")
	}
	st := db.Capsules()
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"a", "b"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	text := func(i int) string {
		var b strings.Builder
		for j := 0; j <= i%7; j++ {
			b.WriteString(words[(i+j*j)%len(words)] + " filler" + strings.Repeat(" word", i%5) + " ")
		}
		return b.String()
	}
	for i := range 150 {
		addTextItem(t, st, "a", fmt.Sprintf("itm_a%03d", i), nil, t0, text(i), text(i+2))
		addTextItem(t, st, "b", fmt.Sprintf("itm_b%03d", i), nil, t0, text(i+3))
	}
	type hit struct {
		id    string
		idx   int
		score float64
	}
	reference := func(capsule, query string) map[string]float64 {
		rows, err := db.Pool().Query(ctx, `SELECT item_id, idx, s FROM (
			SELECT k.item_id, k.idx, -(k.text <@> to_bm25query($2, 'chunks_bm25')) AS s FROM chunks k
			JOIN capsules c ON c.id = k.capsule_id WHERE c.name = $1) m
			WHERE s > 0`, capsule, query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]float64{}
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.idx, &h.score); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s/%d", h.id, h.idx)] = h.score
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(t *testing.T, capsule string, terms []string, tol float64) {
		var got []hit
		err := st.Keyword(ctx, capsule, terms, func(id string, idx int, s float64) bool {
			got = append(got, hit{id, idx, s})
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		want := reference(capsule, strings.Join(terms, " "))
		if len(got) != len(want) {
			t.Fatalf("Keyword gave %d hits, scoring every chunk %d", len(got), len(want))
		}
		worst := 0.0
		for i, h := range got {
			key := fmt.Sprintf("%s/%d", h.id, h.idx)
			w, ok := want[key]
			if !ok {
				t.Fatalf("hit %d, %s, is not a match of scoring every chunk", i, key)
			}
			if d := math.Abs(h.score-w) / w; d > tol {
				t.Fatalf("hit %d, %s: score %v, scoring it alone %v (%.2g apart, more than %g)", i, key, h.score, w, d, tol)
			} else {
				worst = max(worst, d)
			}
			if i > 0 {
				p := got[i-1]
				if p.score < h.score || (p.score == h.score && (p.id > h.id || (p.id == h.id && p.idx >= h.idx))) {
					t.Fatalf("hits %d and %d out of order: %v, %v", i-1, i, p, h)
				}
			}
		}
		t.Logf("%d hits, scores at most %.2g from scoring each alone", len(got), worst)
	}
	cases := []struct {
		capsule string
		terms   []string
	}{
		{"a", []string{"alpha"}},
		{"a", []string{"beta", "gamma", "nothing"}},
		{"a", []string{"filler"}}, // all 300 chunks: three pages
		{"b", []string{"delta", "word"}},
		{"b", []string{"nothing"}},
	}
	for _, tc := range cases {
		t.Run(tc.capsule+"/"+strings.Join(tc.terms, "+"), func(t *testing.T) { check(t, tc.capsule, tc.terms, 1e-6) })
	}
	if _, err := db.Pool().Exec(ctx, "SELECT bm25_spill_index('chunks_bm25')"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run("spilled/"+tc.capsule+"/"+strings.Join(tc.terms, "+"), func(t *testing.T) { check(t, tc.capsule, tc.terms, 0.02) })
	}
	for _, stop := range []int{1, 128, 129} {
		n := 0
		err := st.Keyword(ctx, "a", []string{"filler"}, func(string, int, float64) bool { n++; return n < stop })
		if err != nil || n != stop {
			t.Fatalf("stop at %d: called %d times, %v", stop, n, err)
		}
	}
}

// TestKeywordBounds checks that KeywordBounds gives each term's best score
// alone, as the first hit of a one-term Keyword, with either full-text
// method.
func TestKeywordBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ft := range []postgres.FullText{postgres.FullTextBM25, postgres.FullTextTSVector} {
		t.Run(string(ft), func(t *testing.T) {
			t.Parallel()
			db := openFresh(t, postgres.Options{})
			if ft == postgres.FullTextBM25 && db.FullText() != ft {
				t.Skip("the test server has no pg_textsearch")
			}
			if ft != db.FullText() {
				db = openFresh(t, postgres.Options{FullText: ft})
			}
			st := db.Capsules()
			t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
			for _, c := range []string{"a", "b"} {
				if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
					t.Fatal(err)
				}
			}
			texts := []string{"honey bees make honey", "bees and wasps", "the moon and the sun", "honey cake with honey and more honey"}
			for i, tx := range texts {
				c := []string{"a", "b"}[i%2]
				addTextItem(t, st, c, fmt.Sprintf("itm_%d", i), nil, t0, tx)
			}
			terms := []string{"honey", "bees", "nothing", "the", "moon", "it's"}
			for _, c := range []string{"a", "b"} {
				got, err := st.KeywordBounds(ctx, c, terms)
				if err != nil {
					t.Fatal(err)
				}
				for i, tm := range terms {
					want := 0.0
					if err := st.Keyword(ctx, c, []string{tm}, func(_ string, _ int, s float64) bool { want = s; return false }); err != nil {
						t.Fatal(err)
					}
					if math.Abs(got[i]-want) > 1e-6*want {
						t.Errorf("capsule %s, term %q: bound %v, want %v", c, tm, got[i], want)
					}
				}
			}
			if _, err := st.KeywordBounds(ctx, "missing", terms); err == nil {
				t.Fatal("bounds of a missing capsule: no error")
			}
		})
	}
}

// TestKeywordFilteredPages checks BM25 keyword search under a filter that
// passes a small share of the index's chunks, and in a capsule that holds a
// small share of them (both read in unfiltered pages of the index's top
// rows, sized by that share): the hits are exactly the unfiltered search's
// hits of the items that pass, in the same order with the same scores, also
// when a group of equal scores straddles pages and when the caller stops
// early, with other capsules' chunks in the index; and the small capsule's
// hits are every match of scoring each of its chunks.
func TestKeywordFilteredPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	if db.FullText() != postgres.FullTextBM25 {
		t.Skip("the test server has no pg_textsearch")
	}
	st := db.Capsules()
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"a", "b", "c"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	// Metadata keys and values that are SQL, jsonpath and LIKE syntax
	// reach the sized pages' statements as data.
	const (
		oddKey   = `we'ird "key"; DROP TABLE items; -- $1 \ é`
		oddValue = `v'%d\%%_"); --`
		pathKey  = `a.b[*] ? (@ > 1) || $team`
	)
	words := []string{"ledger", "invoice", "refund", "parcel", "courier"}
	text := func(i int) string {
		// Chunks repeat, so many scores are equal.
		var b strings.Builder
		for j := 0; j <= i%3; j++ {
			b.WriteString(words[(i+j)%len(words)] + " note ")
		}
		return b.String()
	}
	for i := range 240 {
		for _, c := range []string{"a", "b", "c"} {
			// a holds most of the index's chunks (its unfiltered search,
			// the reference below, reads the index's pages as they come);
			// c is small: 24 of the index's 744 chunks.
			if (c == "b" && i >= 120) || (c == "c" && i >= 12) {
				continue
			}
			meta := map[string]any{"team": float64(i % 30), oddKey: fmt.Sprintf(oddValue, i%30), pathKey: float64(i % 30)}
			addTextItem(t, st, c, fmt.Sprintf("itm_%s%03d", c, i), meta, t0, text(i), text(i+1))
		}
	}
	// The page is sized by the table's row count and the capsule's share,
	// which ANALYZE sets.
	if _, err := db.Pool().Exec(ctx, "ANALYZE chunks"); err != nil {
		t.Fatal(err)
	}
	team := domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "team", Op: domain.OpIn, Value: []any{3.0, 7.0}}}}
	// The same items, through the odd keys and values.
	odd := []domain.Wishlist{
		{Metadata: []domain.MetadataFilter{{Key: oddKey, Op: domain.OpIn, Value: []any{fmt.Sprintf(oddValue, 3), fmt.Sprintf(oddValue, 7)}}}},
		{Metadata: []domain.MetadataFilter{{Key: pathKey, Op: domain.OpIn, Value: []any{3.0, 7.0}}}},
	}
	passes := func(id string) bool {
		var n int
		fmt.Sscanf(id[5:], "%d", &n)
		return id[4] == 'a' && (n%30 == 3 || n%30 == 7)
	}
	type hit struct {
		id    string
		idx   int
		score float64
	}
	for _, q := range [][]string{{"note"}, {"ledger"}, {"refund", "courier"}, {"nothing"}} {
		t.Run(strings.Join(q, "+"), func(t *testing.T) {
			var want []hit
			if err := st.KeywordN(ctx, "a", q, 1000, func(id string, idx int, s float64) bool {
				if passes(id) {
					want = append(want, hit{id, idx, s})
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			for _, first := range []int{1, 5, 100} {
				for j, w := range append([]domain.Wishlist{team}, odd...) {
					var got []hit
					if err := st.KeywordWhere(ctx, "a", q, first, w, func(id string, idx int, s float64) bool {
						got = append(got, hit{id, idx, s})
						return true
					}); err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("first page %d, filter %d: filtered search gave\n%v\nthe unfiltered search's hits that pass are\n%v", first, j, got, want)
					}
				}
				if len(want) < 3 {
					continue
				}
				n := 0
				if err := st.KeywordWhere(ctx, "a", q, first, team, func(string, int, float64) bool { n++; return n < 3 }); err != nil || n != 3 {
					t.Fatalf("first page %d, stop at 3: called %d times, %v", first, n, err)
				}
			}
			t.Logf("%d hits", len(want))
		})
	}
	// The small capsule, unfiltered and with a filter left to SQL: every
	// match of scoring each of its chunks, with the same scores, in order.
	reference := func(query string, uriPrefix string) map[string]float64 {
		rows, err := db.Pool().Query(ctx, `SELECT k.item_id, k.idx, -(k.text <@> to_bm25query($1, 'chunks_bm25')) FROM chunks k
			JOIN items i ON i.id = k.item_id JOIN capsules c ON c.id = k.capsule_id
			WHERE c.name = 'c' AND starts_with(i.uri, $2)`, query, uriPrefix)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]float64{}
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.idx, &h.score); err != nil {
				t.Fatal(err)
			}
			if h.score > 0 {
				out[fmt.Sprintf("%s/%d", h.id, h.idx)] = h.score
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The small capsule with filters on the odd keys (an order test, which
	// no index answers, and in): the unfiltered search's hits that pass.
	below5 := []domain.Wishlist{
		{Metadata: []domain.MetadataFilter{{Key: pathKey, Op: domain.OpLt, Value: 5.0}}},
		{Metadata: []domain.MetadataFilter{{Key: oddKey, Op: domain.OpIn, Value: []any{
			fmt.Sprintf(oddValue, 0), fmt.Sprintf(oddValue, 1), fmt.Sprintf(oddValue, 2), fmt.Sprintf(oddValue, 3), fmt.Sprintf(oddValue, 4)}}}},
	}
	for _, q := range [][]string{{"note"}, {"ledger"}, {"refund", "courier"}, {"nothing"}} {
		t.Run("capsule c, odd keys/"+strings.Join(q, "+"), func(t *testing.T) {
			var want []hit
			if err := st.KeywordN(ctx, "c", q, 1000, func(id string, idx int, s float64) bool {
				var n int
				fmt.Sscanf(id[5:], "%d", &n)
				if n < 5 {
					want = append(want, hit{id, idx, s})
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			for j, w := range below5 {
				for _, first := range []int{1, 100} {
					var got []hit
					if err := st.KeywordWhere(ctx, "c", q, first, w, func(id string, idx int, s float64) bool {
						got = append(got, hit{id, idx, s})
						return true
					}); err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("filter %d, first page %d: filtered search gave\n%v\nthe unfiltered search's hits that pass are\n%v", j, first, got, want)
					}
				}
			}
			t.Logf("%d hits", len(want))
		})
	}
	for _, q := range [][]string{{"note"}, {"ledger"}, {"refund", "courier"}, {"nothing"}} {
		for _, prefix := range []string{"", "itm_c00"} {
			t.Run("capsule c/"+strings.Join(q, "+")+"/"+prefix, func(t *testing.T) {
				var w domain.Wishlist
				if prefix != "" {
					w.URIPrefix = prefix
				}
				want := reference(strings.Join(q, " "), prefix)
				for _, first := range []int{1, 100} {
					var got []hit
					if err := st.KeywordWhere(ctx, "c", q, first, w, func(id string, idx int, s float64) bool {
						got = append(got, hit{id, idx, s})
						return true
					}); err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("first page %d: %d hits, scoring every chunk %d", first, len(got), len(want))
					}
					for i, h := range got {
						ws, ok := want[fmt.Sprintf("%s/%d", h.id, h.idx)]
						if !ok || math.Abs(h.score-ws) > 1e-6*ws {
							t.Fatalf("first page %d, hit %d %v: scoring it alone %v (found %v)", first, i, h, ws, ok)
						}
						if i > 0 {
							p := got[i-1]
							if p.score < h.score || (p.score == h.score && (p.id > h.id || (p.id == h.id && p.idx >= h.idx))) {
								t.Fatalf("first page %d: hits %d and %d out of order: %v, %v", first, i-1, i, p, h)
							}
						}
					}
				}
			})
		}
	}
}

// TestKeywordRescoredReadsMatches checks the statements that score chunks
// from their text when pg_textsearch's index gives nothing (after it lost
// its state, and for every query whose words match no chunk): they give
// what scoring every chunk of the capsule gives, and they score only the
// chunks that hold a query word, so a query of words the capsule lacks
// scores none. The scoring function's calls are counted by PostgreSQL
// (track_functions), in the statement's own transaction.
func TestKeywordRescoredReadsMatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	if db.FullText() != postgres.FullTextBM25 {
		t.Skip("the test server has no pg_textsearch")
	}
	st := db.Capsules()
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"a", "b"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	// Chunks of other shapes than passages with titles: chat lines, notes,
	// a URL, hyphenated and quoted words; filler chunks that hold none of
	// the query words.
	texts := []string{
		"[10:02] ana: the covid-19 booster is on friday, bring the form",
		"note to self: O'Brien's honey order ships via https://shop.example.com/?id=7&q=honey",
		"bees and wasps; bees again",
		"honey cake with honey and more honey",
	}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("filler line %d about the weather and the tides", i))
	}
	for i, tx := range texts {
		c := "a"
		if i%5 == 4 {
			c = "b"
		}
		addTextItem(t, st, c, fmt.Sprintf("itm_%02d", i), nil, t0, tx)
	}
	var capID, chunks int64
	if err := db.Pool().QueryRow(ctx, `SELECT c.id, (SELECT count(*) FROM chunks k WHERE k.capsule_id = c.id)
		FROM capsules c WHERE c.name = 'a'`).Scan(&capID, &chunks); err != nil {
		t.Fatal(err)
	}
	// counted runs sql in a transaction that counts calls of `<@>`'s
	// function, and returns the last column of each row (the score) and
	// that count.
	counted := func(t *testing.T, sql string, args ...any) ([]float64, int64) {
		t.Helper()
		tx, err := db.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SET LOCAL track_functions = 'all'"); err != nil {
			t.Fatal(err)
		}
		// The count holds calls not yet reported, from earlier
		// transactions of the connection too: the statement's are the
		// difference.
		callsSQL := `SELECT coalesce(pg_stat_get_xact_function_calls(o.oprcode), 0) FROM pg_operator o
			WHERE o.oprname = '<@>' AND o.oprleft = 'text'::regtype AND o.oprright = 'bm25query'::regtype`
		var before, after int64
		if err := tx.QueryRow(ctx, callsSQL).Scan(&before); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var f float64
			switch v := vals[len(vals)-1].(type) {
			case float64:
				f = v
			case float32:
				f = float64(v)
			default:
				t.Fatalf("score of type %T", v)
			}
			out = append(out, f)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, callsSQL).Scan(&after); err != nil {
			t.Fatal(err)
		}
		return out, after - before
	}
	everyChunk := `SELECT item_id, idx, s FROM (
		SELECT k.item_id, k.idx, -(k.text <@> to_bm25query($2, 'chunks_bm25')) AS s FROM chunks k
		WHERE k.capsule_id = $1) m WHERE s > 0 ORDER BY s DESC, item_id, idx`
	for _, q := range []string{"honey", "bees honey", "covid-19 booster", "O'Brien", "https://shop.example.com/?id=7&q=honey",
		"ompf", "the and of", "", "wasps ompf"} {
		t.Run(q, func(t *testing.T) {
			want, all := counted(t, everyChunk, capID, q)
			if all < chunks {
				t.Fatalf("scoring every chunk counted %d calls for %d chunks: the count does not see the calls", all, chunks)
			}
			got, calls := counted(t, postgres.KeywordRescoredSQL, capID, q)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("scores %v, scoring every chunk %v", got, want)
			}
			// Each chunk that holds a word is scored at most twice (the
			// select list and the s > 0 test).
			if calls > 2*int64(len(want)) {
				t.Errorf("%d calls for %d matching chunks of %d", calls, len(want), chunks)
			}
		})
	}
	terms := []string{"honey", "ompf", "bees", "the", "covid-19", "O'Brien"}
	got, calls := counted(t, postgres.BoundsRescored, capID, terms)
	want, err := st.KeywordBounds(ctx, "a", terms)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d bounds for %d terms", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-5*want[i] {
			t.Errorf("term %q: bound %v from the text, %v from the index", terms[i], got[i], want[i])
		}
	}
	if calls > 2*5 {
		t.Errorf("bounds: %d calls, for 5 chunks that hold a term", calls)
	}
}

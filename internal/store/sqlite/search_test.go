package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// addItem indexes one item with the given chunk texts into a capsule.
func addItem(t *testing.T, st *sqlite.CapsuleStore, capsule, id string, texts ...string) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	hash := "h_" + id
	if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: capsule, Kind: domain.ItemText, URI: id, ContentHash: hash,
		TimeAdded: t0, TimeUpdated: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := startItem(ctx, st, id, hash, t0); err != nil {
		t.Fatal(err)
	}
	cs := make([]domain.Chunk, len(texts))
	for i, tx := range texts {
		cs[i] = domain.Chunk{Idx: i, Text: tx, End: len(tx)}
	}
	if _, err := st.CompleteItem(ctx, id, hash, strings.Join(texts, "\n"), cs, t0); err != nil {
		t.Fatal(err)
	}
}

// keywordAll returns every keyword hit of the capsule as "item/idx score".
func keywordAll(t *testing.T, st *sqlite.CapsuleStore, capsule string, terms ...string) []string {
	t.Helper()
	var out []string
	err := st.Keyword(context.Background(), capsule, terms, func(id string, idx int, score float64) bool {
		out = append(out, fmt.Sprintf("%s/%d %.9f", id, idx, score))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// keywordReference is the plain form of the keyword search: every match of
// the capsule scored and sorted by SQL (what Keyword must equal).
func keywordReference(t *testing.T, db *sqlite.DB, capsule string, terms ...string) []string {
	t.Helper()
	quoted := make([]string, len(terms))
	for i, tm := range terms {
		quoted[i] = `"` + strings.ReplaceAll(tm, `"`, `""`) + `"`
	}
	var capID int64
	ctx := context.Background()
	if err := db.Read().QueryRowContext(ctx, "SELECT id FROM capsules WHERE name = ?", capsule).Scan(&capID); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Read().QueryContext(ctx, `SELECT k.item_id, k.idx, -bm25(chunks_fts, 1.0, 0.0) AS s
		FROM chunks_fts JOIN chunks k ON k.id = chunks_fts.rowid WHERE chunks_fts MATCH ? ORDER BY s DESC, k.item_id, k.idx`,
		fmt.Sprintf("cap : c%d AND body : (%s)", capID, strings.Join(quoted, " OR ")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var idx int
		var s float64
		if err := rows.Scan(&id, &idx, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s/%d %.9f", id, idx, s))
	}
	return out
}

// TestKeywordScopes checks that Keyword returns exactly the capsule's
// matches, scored and ordered as the plain full-scoring query does, whether
// the capsule's rows are alone in their rowid range (the fast form) or
// interleaved with another capsule's (the cap-token form), and across
// pages.
func TestKeywordScopes(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	st := db.Capsules()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"solo", "a", "b", "empty"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	text := func(i int) string {
		// Term frequencies and lengths vary, so scores mostly differ.
		var b strings.Builder
		for j := 0; j <= i%7; j++ {
			b.WriteString(words[(i+j*j)%len(words)] + " filler" + strings.Repeat(" x", i%5) + " ")
		}
		return b.String()
	}
	// "solo" first, alone in its range; then "a" and "b" interleaved.
	for i := range 150 {
		addItem(t, st, "solo", fmt.Sprintf("itm_s%03d", i), text(i), text(i+1))
	}
	for i := range 150 {
		addItem(t, st, "a", fmt.Sprintf("itm_a%03d", i), text(i), text(i+2))
		addItem(t, st, "b", fmt.Sprintf("itm_b%03d", i), text(i+3))
	}
	for _, tc := range []struct {
		capsule string
		terms   []string
	}{
		{"solo", []string{"alpha"}},
		{"solo", []string{"alpha", "zeta", "nothing"}},
		{"solo", []string{"filler"}}, // every chunk: 300 rows, three pages
		{"a", []string{"beta", "gamma"}},
		{"a", []string{"filler"}},
		{"b", []string{"delta", "x"}},
		{"empty", []string{"alpha"}},
		{"solo", []string{`"`, "AND", "NEAR", "*", "body:alpha"}}, // syntax is data
	} {
		t.Run(tc.capsule+"/"+strings.Join(tc.terms, "+"), func(t *testing.T) {
			got := keywordAll(t, st, tc.capsule, tc.terms...)
			want := keywordReference(t, db, tc.capsule, tc.terms...)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("Keyword gave %d hits, the full query %d\n got %.5q\nwant %.5q", len(got), len(want), got, want)
			}
			if tc.capsule == "empty" && len(got) != 0 {
				t.Fatalf("empty capsule: %v", got)
			}
		})
	}
	// KeywordBounds is each term's best single-term score, in either scope.
	for _, c := range []string{"solo", "a", "b", "empty"} {
		terms := []string{"alpha", "nothing", "x", "filler", `"`}
		bounds, err := st.KeywordBounds(ctx, c, terms)
		if err != nil {
			t.Fatal(err)
		}
		for i, tm := range terms {
			want := 0.0
			for _, h := range keywordReference(t, db, c, tm)[:min(1, len(keywordReference(t, db, c, tm)))] {
				fmt.Sscanf(h[strings.IndexByte(h, ' ')+1:], "%g", &want)
			}
			if got := fmt.Sprintf("%.9f", bounds[i]); got != fmt.Sprintf("%.9f", want) {
				t.Errorf("%s: bound of %q = %s, want %.9f", c, tm, got, want)
			}
		}
	}
	if _, err := st.KeywordBounds(ctx, "missing", []string{"alpha"}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("bounds of a missing capsule: %v", err)
	}
	// KeywordN gives the same hits whatever page it starts with.
	for _, want := range []int{0, 1, 7, 300, 1000} {
		for _, c := range []string{"solo", "a"} {
			var got []string
			err := st.KeywordN(ctx, c, []string{"filler", "alpha"}, want, func(id string, idx int, score float64) bool {
				got = append(got, fmt.Sprintf("%s/%d %.9f", id, idx, score))
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if ref := keywordReference(t, db, c, "filler", "alpha"); strings.Join(got, "\n") != strings.Join(ref, "\n") {
				t.Fatalf("KeywordN(%s, want %d): %d hits differ from the full query's %d", c, want, len(got), len(ref))
			}
		}
	}
	if got := keywordAll(t, st, "solo", "filler"); len(got) != 300 {
		t.Fatalf("solo filler: %d hits, want 300", len(got))
	}
	if err := st.Keyword(ctx, "missing", []string{"alpha"}, func(string, int, float64) bool { return true }); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("missing capsule: %v", err)
	}
}

// TestKeywordStops checks that Keyword stops when fn says so.
func TestKeywordStops(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	st := db.Capsules()
	if err := st.CreateCapsule(context.Background(), domain.Capsule{Name: "c", CreatedAt: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		addItem(t, st, "c", fmt.Sprintf("itm_%03d", i), "alpha beta")
	}
	for _, stop := range []int{1, 128, 129, 200} {
		n := 0
		err := st.Keyword(context.Background(), "c", []string{"alpha"}, func(string, int, float64) bool { n++; return n < stop })
		if err != nil || n != stop {
			t.Fatalf("stop at %d: called %d times, %v", stop, n, err)
		}
	}
}

// TestChunkTexts: many chunks' texts in one call, in the order asked, with
// the chunks that do not exist (or no longer do) marked not found, across
// more chunks than one compound select holds.
func TestChunkTexts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t)
	st := db.Capsules()
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "c", CreatedAt: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		addItem(t, st, "c", fmt.Sprintf("itm_%03d", i), fmt.Sprintf("first %d", i), fmt.Sprintf("second %d", i))
	}
	if _, err := st.DeleteItem(ctx, "c", "itm_007"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var idxs []int
	for i := 299; i >= 0; i-- {
		ids, idxs = append(ids, fmt.Sprintf("itm_%03d", i)), append(idxs, i%2)
	}
	ids, idxs = append(ids, "itm_001", "nope"), append(idxs, 5, 0)
	texts, found, err := st.ChunkTexts(ctx, ids, idxs)
	if err != nil {
		t.Fatal(err)
	}
	for k := range ids {
		want, _ := st.ChunkText(ctx, ids[k], idxs[k])
		gone := ids[k] == "itm_007" || ids[k] == "nope" || idxs[k] == 5
		if found[k] == gone || texts[k] != want {
			t.Fatalf("%s#%d: %q found %v, want %q", ids[k], idxs[k], texts[k], found[k], want)
		}
	}
	if texts, found, err := st.ChunkTexts(ctx, nil, nil); err != nil || len(texts) != 0 || len(found) != 0 {
		t.Fatalf("empty: %v %v %v", texts, found, err)
	}
}

package retrieval

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"

	"capsuled/internal/domain"
)

// fakeKeywordSource scores chunks by summing fixed per-term contributions,
// as BM25 does; tiny contributions imitate FTS5's collapsed IDF in a tiny
// capsule.
type fakeKeywordSource struct {
	fakeSource
	contrib map[string]map[ref]float64 // term → chunk → its BM25 part
}

func (f *fakeKeywordSource) Keyword(_ context.Context, _ string, terms []string, fn func(string, int, float64) bool) error {
	sum := map[ref]float64{}
	for _, t := range terms {
		for r, s := range f.contrib[t] {
			sum[r] += s
		}
	}
	refs := make([]ref, 0, len(sum))
	for r := range sum {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		if sum[refs[i]] != sum[refs[j]] {
			return sum[refs[i]] > sum[refs[j]]
		}
		return refLess(refs[i], refs[j])
	})
	for _, r := range refs {
		if !fn(r.item, r.idx, sum[r]) {
			return nil
		}
	}
	return nil
}

func TestKeywordNormQuery(t *testing.T) {
	t.Parallel()
	a, b := ref{"a", 0}, ref{"a", 1}
	for _, tc := range []struct {
		name  string
		scale float64 // multiplies every contribution (1e-6: collapsed IDF)
		query string
		want  map[ref]float64
	}{
		{"every term at its best", 1, "solar panels", map[ref]float64{a: 1, b: 0.5}},
		{"collapsed idf", 1e-6, "solar panels", map[ref]float64{a: 1, b: 0.5}},
		{"half the terms absent", 1e-6, "solar panels quark gluon", map[ref]float64{a: 0.5, b: 0.25}},
		{"one term", 3, "panels", map[ref]float64{a: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeKeywordSource{
				fakeSource: fakeSource{items: []domain.Item{{ID: "a", Capsule: "c"}}},
				contrib: map[string]map[ref]float64{
					"solar":  {a: 2 * tc.scale, b: 2 * tc.scale},
					"panels": {a: 2 * tc.scale},
				},
			}
			e := New(src, nil, 0, Config{})
			hits, err := e.Search(context.Background(), "c", domain.Query{Text: tc.query, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != len(tc.want) {
				t.Fatalf("%d hits, want %d", len(hits), len(tc.want))
			}
			for _, h := range hits {
				if w := tc.want[ref{h.Item.ID, h.Idx}]; math.Abs(h.Score-w) > 1e-9 {
					t.Errorf("chunk %s/%d: score %v, want %v", h.Item.ID, h.Idx, h.Score, w)
				}
			}
		})
	}
}

func TestKeywordNormSaturate(t *testing.T) {
	t.Parallel()
	e := New(&fakeSource{}, nil, 0, Config{KeywordNorm: KeywordNormSaturate, BM25Scale: 10})
	for _, tc := range []struct{ raw, want float64 }{{0, 0}, {10, 0.5}, {30, 0.75}, {-1, 0}} {
		if got := e.keywordScore(tc.raw, 0); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("keywordScore(%v) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// TestKeywordBoundCache checks that a term's cached best score is dropped
// when any capsule changes.
func TestKeywordBoundCache(t *testing.T) {
	t.Parallel()
	a, b := ref{"a", 0}, ref{"b", 0}
	src := &fakeKeywordSource{
		fakeSource: fakeSource{items: []domain.Item{{ID: "a", Capsule: "c"}, {ID: "b", Capsule: "c"}}},
		contrib:    map[string]map[ref]float64{"solar": {a: 2}},
	}
	e := New(src, nil, 0, Config{})
	ctx := context.Background()
	score := func() float64 {
		hits, err := e.Search(ctx, "c", domain.Query{Text: "solar", Limit: 10})
		if err != nil || len(hits) == 0 || hits[len(hits)-1].Item.ID != "a" {
			t.Fatalf("hits %+v, %v", hits, err)
		}
		return hits[len(hits)-1].Score
	}
	if s := score(); s != 1 {
		t.Fatalf("alone: %v, want 1", s)
	}
	// b now matches twice as well: a's share halves once the engine hears
	// of the change (here, an item of another capsule).
	src.contrib["solar"][b] = 4
	e.ItemIndexed(domain.Item{ID: "x", Capsule: "other"}, nil)
	if s := score(); s != 0.5 {
		t.Fatalf("after the change: %v, want 0.5", s)
	}
}

// fakeBoundsSource is a fakeKeywordSource that also answers KeywordBounds,
// recording what it was asked.
type fakeBoundsSource struct {
	fakeKeywordSource
	asked [][]string
}

func (f *fakeBoundsSource) KeywordBounds(_ context.Context, _ string, terms []string) ([]float64, error) {
	f.asked = append(f.asked, append([]string(nil), terms...))
	out := make([]float64, len(terms))
	for i, t := range terms {
		for _, s := range f.contrib[t] {
			out[i] = max(out[i], s)
		}
	}
	return out, nil
}

// TestKeywordBounder checks that a source with KeywordBounds is asked once
// per query for the terms not cached, and that the scores are those of the
// per-term Keyword bounds.
func TestKeywordBounder(t *testing.T) {
	t.Parallel()
	a, b := ref{"a", 0}, ref{"a", 1}
	contrib := map[string]map[ref]float64{"solar": {a: 2, b: 3}, "panels": {a: 2}, "roof": {b: 1}}
	items := []domain.Item{{ID: "a", Capsule: "c"}}
	plain := New(&fakeKeywordSource{fakeSource: fakeSource{items: items}, contrib: contrib}, nil, 0, Config{})
	src := &fakeBoundsSource{fakeKeywordSource: fakeKeywordSource{fakeSource: fakeSource{items: items}, contrib: contrib}}
	batched := New(src, nil, 0, Config{})
	ctx := context.Background()
	for i, q := range []string{"solar panels", "solar roof quark", "panels roof"} {
		want, err := plain.Search(ctx, "c", domain.Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		got, err := batched.Search(ctx, "c", domain.Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d hits, want %d", q, len(got), len(want))
		}
		for j := range got {
			if got[j].Idx != want[j].Idx || got[j].Score != want[j].Score {
				t.Errorf("%q hit %d: %d %v, want %d %v", q, j, got[j].Idx, got[j].Score, want[j].Idx, want[j].Score)
			}
		}
		if len(src.asked) != i+1 && i < 2 {
			t.Fatalf("after %q: asked %v, want one call per query", q, src.asked)
		}
	}
	// The third query's terms were all cached by then.
	want := [][]string{{"solar", "panels"}, {"roof", "quark"}}
	if fmt.Sprint(src.asked) != fmt.Sprint(want) {
		t.Fatalf("asked %v, want %v", src.asked, want)
	}
}

// fakePagerSource is a fakeKeywordSource with KeywordN, recording the wants.
type fakePagerSource struct {
	fakeKeywordSource
	wants []int
}

func (f *fakePagerSource) KeywordN(ctx context.Context, capsule string, terms []string, want int, fn func(string, int, float64) bool) error {
	f.wants = append(f.wants, want)
	return f.Keyword(ctx, capsule, terms, fn)
}

// TestKeywordPager checks that a paging source is told the query's keyword
// depth (twice that under a filter).
func TestKeywordPager(t *testing.T) {
	t.Parallel()
	src := &fakePagerSource{fakeKeywordSource: fakeKeywordSource{
		fakeSource: fakeSource{items: []domain.Item{{ID: "a", Capsule: "c", Kind: domain.ItemText}}},
		contrib:    map[string]map[ref]float64{"solar": {{"a", 0}: 2}},
	}}
	e := New(src, nil, 0, Config{})
	ctx := context.Background()
	for _, q := range []domain.Query{
		{Text: "solar", Limit: 10},
		{Text: "solar", Limit: 10, Wishlist: domain.Wishlist{MaxChunksPerItem: 1}},
		{Text: "solar", Limit: 10, Wishlist: domain.Wishlist{Kinds: []domain.ItemKind{domain.ItemText}}},
	} {
		hits, err := e.Search(ctx, "c", q)
		if err != nil || len(hits) != 1 {
			t.Fatalf("%+v: %v %v", q, hits, err)
		}
	}
	// Keyword mode (no embedder): depth is the limit; with
	// max_chunks_per_item, ten times the limit, halved outside hybrid; a
	// filter doubles what is asked.
	if fmt.Sprint(src.wants) != fmt.Sprint([]int{10, 50, 20}) {
		t.Fatalf("wants %v", src.wants)
	}
}

// fakeWordEmbedder is a query embedder (it embeds nothing) that knows a
// fixed vocabulary of words.
type fakeWordEmbedder struct{ words map[string]bool }

func (fakeWordEmbedder) Embed(context.Context, []string) ([][]float32, error) { return nil, nil }
func (f fakeWordEmbedder) HasWord(w string) bool                              { return f.words[w] }

// TestKeywordCoverage: the coverage of KeywordNormCoverage is the share of
// the query's ordinary words that the capsule holds; a rare token found
// nowhere (one the model does not know as a word) does not count.
func TestKeywordCoverage(t *testing.T) {
	t.Parallel()
	src := &fakeKeywordSource{
		fakeSource: fakeSource{items: []domain.Item{{ID: "a", Capsule: "c"}}},
		contrib:    map[string]map[ref]float64{"rise": {{"a", 0}: 2}},
	}
	ctx := context.Background()
	words := fakeWordEmbedder{words: map[string]bool{"sea": true, "rise": true, "fall": true}}
	for _, tc := range []struct {
		name  string
		emb   QueryEmbedder
		terms []string
		cover float64
	}{
		{"two ordinary words of three absent", words, []string{"sea", "rise", "fall"}, 1.0 / 3},
		{"an absent rare token does not count", words, []string{"rise", "htrpml2"}, 1},
		{"without a vocabulary every term counts", nil, []string{"rise", "htrpml2"}, 0.5},
		{"no ordinary word", words, []string{"htrpml2"}, 1},
	} {
		e := New(src, tc.emb, 0, Config{})
		n, err := e.queryKeywordNorm(ctx, "c", tc.terms)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(n.cover-tc.cover) > 1e-12 {
			t.Errorf("%s: cover %v, want %v", tc.name, n.cover, tc.cover)
		}
	}
}

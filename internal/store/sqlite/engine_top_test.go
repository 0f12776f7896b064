package sqlite_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
	"capsuled/internal/store/sqlite"
)

// plainSource is the store without KeywordTop: the engine then reads the
// keyword ranking through KeywordN, scoring every match.
type plainSource struct{ st *sqlite.CapsuleStore }

func (p plainSource) SearchableItems(ctx context.Context, c string) ([]domain.Item, error) {
	return p.st.SearchableItems(ctx, c)
}
func (p plainSource) ChunkVectors(ctx context.Context, c string, fn func(string, int, []float32) error) error {
	return p.st.ChunkVectors(ctx, c, fn)
}
func (p plainSource) Keyword(ctx context.Context, c string, ts []string, fn func(string, int, float64) bool) error {
	return p.st.Keyword(ctx, c, ts, fn)
}
func (p plainSource) KeywordN(ctx context.Context, c string, ts []string, want int, fn func(string, int, float64) bool) error {
	return p.st.KeywordN(ctx, c, ts, want, fn)
}
func (p plainSource) KeywordBounds(ctx context.Context, c string, ts []string) ([]float64, error) {
	return p.st.KeywordBounds(ctx, c, ts)
}
func (p plainSource) ChunkText(ctx context.Context, id string, idx int) (string, error) {
	return p.st.ChunkText(ctx, id, idx)
}

// TestEngineKeywordTop checks that the engine's keyword search over the
// store's KeywordTop (bounded scoring, a selective filter's items scored
// alone) finds what it finds over full scoring: the same hits in the same
// order with the same scores (to rounding: full scoring sums the terms in
// the query's order, KeywordTop in its bounds'), with a selective filter
// (5% of the items), a broad one (half), none, and a per-item cap.
func TestEngineKeywordTop(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	st := db.Capsules()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "c", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(18, 3))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(18, 4)), 1.2, 2, 39)
	word := func() string { return fmt.Sprintf("v%02dq", zipf.Uint64()) }
	for i := range 140 {
		id := fmt.Sprintf("itm_%03d", i)
		hash := "h_" + id
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText, URI: id, ContentHash: hash,
			TimeAdded: t0, TimeUpdated: t0, Metadata: map[string]any{"group": float64(i % 20)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := startItem(ctx, st, id, hash, t0); err != nil {
			t.Fatal(err)
		}
		cs := make([]domain.Chunk, 1+rng.IntN(3))
		var texts []string
		for j := range cs {
			w := make([]string, 4+rng.IntN(20))
			for k := range w {
				w[k] = word()
			}
			cs[j] = domain.Chunk{Idx: j, Text: strings.Join(w, " ")}
			cs[j].End = len(cs[j].Text)
			texts = append(texts, cs[j].Text)
		}
		if _, err := st.CompleteItem(ctx, id, hash, strings.Join(texts, "\n"), cs, t0); err != nil {
			t.Fatal(err)
		}
	}
	top := retrieval.New(st, nil, 0, retrieval.Config{})
	plain := retrieval.New(plainSource{st}, nil, 0, retrieval.Config{})
	filters := [][]domain.MetadataFilter{
		nil,
		{{Key: "group", Op: domain.OpEq, Value: 3.0}},  // 5%: scored alone
		{{Key: "group", Op: domain.OpLt, Value: 10.0}}, // half: the ranking, filtered
		{{Key: "group", Op: domain.OpEq, Value: 99.0}}, // none
	}
	for round := range 32 {
		ws := make([]string, 1+rng.IntN(6))
		for i := range ws {
			ws[i] = word()
		}
		q := domain.Query{Text: strings.Join(ws, " "), Limit: []int{1, 10, 40}[round%3],
			Wishlist: domain.Wishlist{Mode: domain.ModeKeyword, Metadata: filters[round%len(filters)]}}
		if round%5 == 0 {
			q.Wishlist.MaxChunksPerItem = 1
		}
		got, err := top.Search(ctx, "c", q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Search(ctx, "c", q)
		if err != nil {
			t.Fatal(err)
		}
		show := func(hs []domain.Hit) string {
			var b strings.Builder
			for _, h := range hs {
				fmt.Fprintf(&b, "%s/%d ", h.Item.ID, h.Idx)
			}
			return b.String()
		}
		if show(got) != show(want) {
			t.Fatalf("%q %v: KeywordTop path\n%s\nfull scoring\n%s", q.Text, q.Wishlist.Metadata, show(got), show(want))
		}
		for i := range got {
			if math.Abs(got[i].Score-want[i].Score) > 1e-12 {
				t.Fatalf("%q: hit %d scores %v, full scoring %v", q.Text, i, got[i].Score, want[i].Score)
			}
		}
		if round%len(filters) == 3 && len(got) != 0 {
			t.Fatalf("a filter nothing passes: %d hits", len(got))
		}
	}
}

package capsule_test

import (
	"context"
	"testing"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
)

// TestScoresOneItemCapsule checks that scores stay meaningful in a capsule of
// one item, where BM25's IDF collapses (every term is in every row): a chunk
// that matches every query term scores 1 in keyword mode, half the terms
// score about half, and every mode stays in [0, 1].
func TestScoresOneItemCapsule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	text := "Solar panels convert sunlight into electricity on rooftops."
	for _, semantic := range []bool{false, true} {
		e := newEnv(t, semantic)
		e.add(t, capsule.NewItem{Text: text, URI: "solar"})
		for _, tc := range []struct {
			query    string
			mode     domain.SearchMode
			min, max float64
		}{
			{"solar panels sunlight", domain.ModeKeyword, 0.99, 1},
			{"solar panels quantum chromodynamics", domain.ModeKeyword, 0.3, 0.7},
			{"solar panels sunlight", domain.ModeHybrid, 0.3, 1},
			{text, domain.ModeHybrid, 0.99, 1}, // the fake embedder gives the chunk's own vector
		} {
			if tc.mode == domain.ModeHybrid && !semantic {
				continue
			}
			hits, err := e.svc.Query(ctx, "docs", domain.Query{Text: tc.query, Limit: 10, Wishlist: domain.Wishlist{Mode: tc.mode}})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 {
				t.Fatalf("%s %q: no hits", tc.mode, tc.query)
			}
			for _, h := range hits {
				if h.Score < 0 || h.Score > 1 {
					t.Errorf("%s %q: score %v outside [0, 1]", tc.mode, tc.query, h.Score)
				}
			}
			if s := hits[0].Score; s < tc.min || s > tc.max {
				t.Errorf("semantic=%v %s %q: top score %.4f, want in [%.2f, %.2f]", semantic, tc.mode, tc.query, s, tc.min, tc.max)
			}
		}
	}
}

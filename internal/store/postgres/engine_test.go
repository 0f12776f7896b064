package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// noLoadStore is the PostgreSQL store with the two reads that load a
// capsule into an engine's memory counted: over PostgreSQL neither may run.
type noLoadStore struct {
	*postgres.CapsuleStore
	loads atomic.Int64
}

func (s *noLoadStore) SearchableItems(ctx context.Context, capsule string) ([]domain.Item, error) {
	s.loads.Add(1)
	return s.CapsuleStore.SearchableItems(ctx, capsule)
}

func (s *noLoadStore) ChunkVectors(ctx context.Context, capsule string, fn func(string, int, []float32) error) error {
	s.loads.Add(1)
	return s.CapsuleStore.ChunkVectors(ctx, capsule, fn)
}

// TestEngineHoldsNoVectors runs queries of every mode, filtered and not,
// through a capsule service on PostgreSQL and checks that its engine never
// loaded the capsule (no vectors, no items in memory), and that a filter the
// database cannot apply (an RFC 3339 time in metadata, compared as a time)
// still gives the query its limit: the engine asks again, deeper.
func TestEngineHoldsNoVectors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &noLoadStore{CapsuleStore: openFresh(t, postgres.Options{}).Capsules()}
	svc := paritySvc(t, st)
	day := func(d int) string {
		return time.Date(2025, 1, d, 0, 0, 0, 0, time.FixedZone("", 3600)).Format(time.RFC3339)
	}
	for i := range 20 {
		it, _, err := svc.AddItem(ctx, "parity", capsule.NewItem{Kind: domain.ItemText, URI: fmt.Sprintf("note%d", i),
			Text: fmt.Sprintf("Note %d about the honey harvest and the bees.", i), Metadata: map[string]any{"date": day(i + 1)}})
		if err != nil {
			t.Fatal(err)
		}
		if it, err = svc.WaitItem(ctx, "parity", it.ID, 30*time.Second); err != nil || it.Status != domain.StatusReady {
			t.Fatalf("%+v %v", it, err)
		}
	}
	late := []domain.MetadataFilter{{Key: "date", Op: domain.OpGte, Value: "2025-01-17T00:00:00Z"}} // 3 notes: the 18th to the 20th (UTC+1)
	for _, mode := range []domain.SearchMode{domain.ModeKeyword, domain.ModeSemantic, domain.ModeHybrid} {
		for _, w := range []domain.Wishlist{{}, {Metadata: late}, {URIPrefix: "doc://", MaxChunksPerItem: 1}} {
			w.Mode = mode
			hits, err := svc.Query(ctx, "parity", domain.Query{Text: "honey bees", Limit: 3, Wishlist: w})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 3 {
				t.Fatalf("%s %+v: %d hits", mode, w, len(hits))
			}
			if w.Metadata != nil {
				for _, h := range hits {
					if d, _ := h.Item.Metadata["date"].(string); d < "2025-01-18" {
						t.Errorf("%s: %s (%s) does not pass the filter", mode, h.Item.URI, d)
					}
				}
			}
		}
	}
	if n := st.loads.Load(); n != 0 {
		t.Errorf("the engine loaded the capsule %d times", n)
	}
	if items, vectors := svc.Engine().Stats("parity"); items != 0 || vectors != 0 {
		t.Errorf("the engine holds %d items, %d vectors", items, vectors)
	}
}

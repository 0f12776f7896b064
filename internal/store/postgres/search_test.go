package postgres_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// TestFullTextAuto checks that the BM25 index is used exactly when the test
// server has pg_textsearch, and that both methods rank the same best chunk.
func TestFullTextAuto(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	var has bool
	if err := db.Pool().QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_textsearch')").Scan(&has); err != nil {
		t.Fatal(err)
	}
	want := postgres.FullTextTSVector
	if has {
		want = postgres.FullTextBM25
	}
	if db.FullText() != want {
		t.Fatalf("FullText() = %q, want %q (pg_textsearch installed: %v)", db.FullText(), want, has)
	}
}

// unit returns a unit vector of dim dimensions pointing mostly along axis.
func unit(dim, axis int, tilt float32) []float32 {
	v := make([]float32, dim)
	v[axis] = 1
	v[(axis+1)%dim] = tilt
	n := float32(math.Sqrt(float64(1 + tilt*tilt)))
	for i := range v {
		v[i] /= n
	}
	return v
}

// TestDenseTopK checks cosine ranking through the HNSW index (384
// dimensions) and by scan (other widths), inside one capsule.
func TestDenseTopK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, dim := range []int{384, 8} {
		t.Run(fmt.Sprint(dim), func(t *testing.T) {
			t.Parallel()
			st := openFresh(t, postgres.Options{}).Capsules()
			t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
			for _, c := range []string{"a", "b"} {
				if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
					t.Fatal(err)
				}
				if _, _, err := st.PutItem(ctx, domain.Item{ID: "itm_" + c, Capsule: c, Kind: domain.ItemText, URI: "u", ContentHash: "h" + c,
					TimeAdded: t0, TimeUpdated: t0}); err != nil {
					t.Fatal(err)
				}
				it, err := st.StartItem(ctx, "itm_"+c, "h"+c, t0)
				if err != nil {
					t.Fatal(err)
				}
				chunks := []domain.Chunk{
					{Idx: 0, Text: "x", Vector: unit(dim, 0, 0.5)},
					{Idx: 1, Text: "y", Vector: unit(dim, 1, 0)},
					{Idx: 2, Text: "z", Vector: unit(dim, 0, 0.1)},
				}
				if _, err := st.CompleteItem(ctx, it.ID, it.ContentHash, "t", chunks, t0); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			ms, err := st.DenseTopK(ctx, "a", unit(dim, 0, 0), 10, domain.Wishlist{})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				got = append(got, fmt.Sprintf("%s/%d", m.ItemID, m.Idx))
				if m.Cosine < -1.0001 || m.Cosine > 1.0001 {
					t.Errorf("cosine %v", m.Cosine)
				}
			}
			if fmt.Sprint(got) != "[itm_a/2 itm_a/0 itm_a/1]" {
				t.Fatalf("nearest: %v", got)
			}
			n := 0
			if err := st.ChunkVectors(ctx, "a", func(_ string, _ int, v []float32) error {
				if len(v) != dim {
					t.Errorf("vector of %d dims", len(v))
				}
				n++
				return nil
			}); err != nil || n != 3 {
				t.Fatalf("chunk vectors: %d %v", n, err)
			}
		})
	}
}

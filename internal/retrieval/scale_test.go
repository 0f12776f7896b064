package retrieval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"capsuled/internal/domain"
)

// fakeSource is an in-memory Source of synthetic items and unit vectors
// (random: they measure the index, not retrieval quality).
type fakeSource struct {
	items []domain.Item
	per   int
	dim   int
	seed  uint64
}

func (f *fakeSource) SearchableItems(context.Context, string) ([]domain.Item, error) {
	return f.items, nil
}

func (f *fakeSource) ChunkVectors(_ context.Context, _ string, fn func(string, int, []float32) error) error {
	r := rand.New(rand.NewPCG(f.seed, 1))
	v := make([]float32, f.dim)
	for _, it := range f.items {
		for idx := range f.per {
			var n float64
			for j := range v {
				v[j] = float32(r.NormFloat64())
				n += float64(v[j] * v[j])
			}
			for j := range v {
				v[j] /= float32(math.Sqrt(n))
			}
			if err := fn(it.ID, idx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fakeSource) Keyword(context.Context, string, []string, func(string, int, float64) bool) error {
	return nil
}

func (f *fakeSource) ChunkText(_ context.Context, id string, idx int) (string, error) {
	return fmt.Sprint(id, "/", idx), nil
}

type fixedEmbedder struct{ v []float32 }

func (f fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = f.v
	}
	return out, nil
}

// BenchmarkDenseScan measures the exact dense scan (semantic mode, limit 10,
// query embedding excluded) over 200,000 synthetic 384-d chunk vectors, with
// and without a metadata filter, and reports the index's heap per 100,000
// chunks.
func BenchmarkDenseScan(b *testing.B) {
	const items, per, dim = 2000, 100, 384
	src := &fakeSource{per: per, dim: dim, seed: 7}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range items {
		src.items = append(src.items, domain.Item{ID: fmt.Sprintf("itm_%06d", i), Capsule: "c", Kind: domain.ItemText,
			TimeAdded: t0, Metadata: map[string]any{"shard": float64(i % 10)}})
	}
	q := make([]float32, dim)
	q[0] = 1
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := New(src, fixedEmbedder{q}, dim, Config{})
	ctx := context.Background()
	if _, err := e.load(ctx, "c"); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perHundredK := float64(after.HeapAlloc-before.HeapAlloc) / (items * per / 100000) / (1 << 20)
	for _, tc := range []struct {
		name string
		w    domain.Wishlist
	}{
		{"all", domain.Wishlist{Mode: domain.ModeSemantic}},
		{"filtered", domain.Wishlist{Mode: domain.ModeSemantic, Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}}},
		{"hybrid", domain.Wishlist{Mode: domain.ModeHybrid}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				hits, err := e.Search(ctx, "c", domain.Query{Text: "q", Limit: 10, Wishlist: tc.w})
				if err != nil || len(hits) != 10 {
					b.Fatal(len(hits), err)
				}
			}
			b.ReportMetric(perHundredK, "MiB/100k-chunks")
		})
	}
}

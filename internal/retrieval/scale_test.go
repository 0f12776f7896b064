package retrieval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"capsuled/internal/domain"
)

// fakeSource is an in-memory Source of synthetic items and unit vectors
// (synthetic: they measure the index, not retrieval quality). With clusters
// > 0 the vectors gather around that many random centres plus a direction
// they all share, as sentence embeddings do; otherwise they are uniform.
type fakeSource struct {
	items    []domain.Item
	per      int
	dim      int
	seed     uint64
	clusters int
}

// centres returns the source's cluster centres (and the shared direction
// last), the same for every call.
func (f *fakeSource) centres() [][]float32 {
	r := rand.New(rand.NewPCG(f.seed, 2))
	out := make([][]float32, f.clusters+1)
	for i := range out {
		out[i] = randomUnit(r, f.dim)
	}
	return out
}

func randomUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	normalize(v)
	return v
}

func normalize(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	for j := range v {
		v[j] /= float32(math.Sqrt(n))
	}
}

// clustered draws a unit vector near a random centre: 0.4 shared
// direction + centre + noise of norm about 0.9.
func clustered(r *rand.Rand, cs [][]float32, dim int) []float32 {
	c := cs[r.IntN(len(cs)-1)]
	shared := cs[len(cs)-1]
	v := make([]float32, dim)
	sd := 0.9 / math.Sqrt(float64(dim))
	for j := range v {
		v[j] = 0.4*shared[j] + c[j] + float32(r.NormFloat64()*sd)
	}
	normalize(v)
	return v
}

func (f *fakeSource) SearchableItems(context.Context, string) ([]domain.Item, error) {
	return f.items, nil
}

func (f *fakeSource) ChunkVectors(_ context.Context, _ string, fn func(string, int, []float32) error) error {
	r := rand.New(rand.NewPCG(f.seed, 1))
	var cs [][]float32
	if f.clusters > 0 {
		cs = f.centres()
	}
	for _, it := range f.items {
		for idx := range f.per {
			var v []float32
			if cs != nil {
				v = clustered(r, cs, f.dim)
			} else {
				v = randomUnit(r, f.dim)
			}
			if err := fn(it.ID, idx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// queries draws n query vectors from the source's distribution.
func (f *fakeSource) queries(n int) [][]float32 {
	r := rand.New(rand.NewPCG(f.seed, 3))
	cs := f.centres()
	out := make([][]float32, n)
	for i := range out {
		out[i] = clustered(r, cs, f.dim)
	}
	return out
}

// newFakeSource makes items×per chunks, shard metadata i%10.
func newFakeSource(items, per, dim, clusters int) *fakeSource {
	src := &fakeSource{per: per, dim: dim, seed: 7, clusters: clusters}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range items {
		src.items = append(src.items, domain.Item{ID: fmt.Sprintf("itm_%06d", i), Capsule: "c", Kind: domain.ItemText,
			TimeAdded: t0, Metadata: map[string]any{"shard": float64(i % 10)}, ChunkCount: per})
	}
	return src
}

// recallAt10 is the mean share of the exact top 10 that the approximate
// scan finds.
func recallAt10(t testing.TB, exact, approx *Engine, qs [][]float32, pred Predicate) float64 {
	ctx := context.Background()
	ce, err := exact.load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := approx.load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	found := 0.0
	for _, q := range qs {
		want := map[ref]bool{}
		for _, c := range denseTopK(ce, q, exact.dim, 10, pred, exact.cfg.ApproxMin, exact.cfg.ApproxRerank) {
			want[c.ref] = true
		}
		for _, c := range denseTopK(ca, q, approx.dim, 10, pred, approx.cfg.ApproxMin, approx.cfg.ApproxRerank) {
			if want[c.ref] {
				found++
			}
		}
	}
	return found / float64(10*len(qs))
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

// BenchmarkDenseScan measures the dense scan (limit 10, query embedding
// excluded) over 200,000 synthetic clustered 384-d chunk vectors
// ($CAPSULED_DENSE_CHUNKS to change), exact and approximate, with and
// without a metadata filter (one item in ten), and hybrid; it reports the
// index's heap per 100,000 chunks and the approximate scan's recall@10
// against the exact one.
func BenchmarkDenseScan(b *testing.B) {
	const per, dim = 100, 384
	items := 2000
	if n, err := strconv.Atoi(os.Getenv("CAPSULED_DENSE_CHUNKS")); err == nil && n >= per {
		items = n / per
	}
	src := newFakeSource(items, per, dim, 2000)
	qs := src.queries(50)
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	approx := New(src, fixedEmbedder{qs[0]}, dim, Config{ApproxMin: 1, GraphMin: -1})
	if _, err := approx.load(ctx, "c"); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perHundredK := float64(after.HeapAlloc-before.HeapAlloc) / (float64(items*per) / 100000) / (1 << 20)
	exact := New(src, fixedEmbedder{qs[0]}, dim, Config{ApproxMin: -1, GraphMin: -1})
	shard3 := domain.Wishlist{Mode: domain.ModeSemantic, Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}}
	recall := recallAt10(b, exact, approx, qs, nil)
	recallFiltered := recallAt10(b, exact, approx, qs, Compile(shard3))
	for _, tc := range []struct {
		name string
		e    *Engine
		w    domain.Wishlist
	}{
		{"exact", exact, domain.Wishlist{Mode: domain.ModeSemantic}},
		{"exact-filtered", exact, shard3},
		{"approx", approx, domain.Wishlist{Mode: domain.ModeSemantic}},
		{"approx-filtered", approx, shard3},
		{"approx-hybrid", approx, domain.Wishlist{Mode: domain.ModeHybrid}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := tc.e.load(ctx, "c"); err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuTime()
			for b.Loop() {
				hits, err := tc.e.Search(ctx, "c", domain.Query{Text: "q", Limit: 10, Wishlist: tc.w})
				if err != nil || len(hits) != 10 {
					b.Fatal(len(hits), err)
				}
			}
			// CPU time per query, all cores together: on a loaded machine
			// it shows the work that wall time hides.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(perHundredK, "MiB/100k-chunks")
			if tc.e == approx {
				b.ReportMetric(recall, "recall@10")
				b.ReportMetric(recallFiltered, "recall@10-filtered")
			}
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package retrieval

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"capsuled/internal/domain"
)

// BenchmarkDenseGraph compares the dense search through the HNSW graph with
// the approximate scan over 20,000 synthetic clustered 384-d chunk vectors
// ($CAPSULED_DENSE_CHUNKS to change; BenchmarkDenseScan's generator): per
// query (limit 10, query embedding excluded) unfiltered, with a filter
// passing one item in ten, and hybrid; and reports the graph's build time
// and heap per 100,000 chunks (beside the flat index's vectors, which it
// shares), the time to write its file (Config.GraphDir) and to read it back
// as a restart does, and each search's recall@10 against exact search, unfiltered and
// with filters passing 10% and 1% of the items.
func BenchmarkDenseGraph(b *testing.B) {
	const per, dim = 100, 384
	items := 200
	if n, err := strconv.Atoi(os.Getenv("CAPSULED_DENSE_CHUNKS")); err == nil && n >= per {
		items = n / per
	}
	hundredK := float64(items*per) / 100000
	src := newFakeSource(items, per, dim, 2000)
	qs := src.queries(50)
	ctx := context.Background()
	scan := New(src, fixedEmbedder{qs[0]}, dim, Config{ApproxMin: 1, GraphMin: -1})
	exact := New(src, fixedEmbedder{qs[0]}, dim, Config{ApproxMin: -1, GraphMin: -1})
	graphEng := New(src, fixedEmbedder{qs[0]}, dim, Config{ApproxMin: 1, GraphMin: 1})
	defer graphEng.Close()
	for _, e := range []*Engine{scan, exact} {
		if _, err := e.load(ctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0, t0 := cpuTime(), time.Now()
	if _, err := graphEng.load(ctx, "c"); err != nil {
		b.Fatal(err)
	}
	if err := graphEng.GraphReady(ctx, "c"); err != nil {
		b.Fatal(err)
	}
	buildWall, buildCPU := time.Since(t0), cpuTime()-cpu0
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Less the scan index the load also built (measured on scan's load).
	graphHeap := float64(after.HeapAlloc-before.HeapAlloc)/(1<<20) - flatHeap(b, src, dim)
	gci := graphEng.capsule("c")
	if gci.graph == nil {
		b.Fatal("no graph")
	}
	// Its file (Config.GraphDir): written, then read back over the same
	// entries, as a restart does instead of building.
	path := GraphPath(b.TempDir(), "c")
	t0 = time.Now()
	if err := gci.graph.save(path); err != nil {
		b.Fatal(err)
	}
	fileWrite := time.Since(t0)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	list, _ := gci.snapshot()
	ids := make([]string, len(list))
	for i, en := range list {
		ids[i] = en.item.ID
	}
	cpu0, t0 = cpuTime(), time.Now()
	read, err := loadGraph(ctx, path, dim, ids, list)
	if err != nil || read.edits != 0 || read.dead != 0 {
		b.Fatalf("reading the graph file: %v (%d insertions, %d dead)", err, read.edits, read.dead)
	}
	fileReadWall, fileReadCPU := time.Since(t0), cpuTime()-cpu0
	shard := func(mod int) Predicate {
		return func(it *domain.Item) bool { n, _ := strconv.Atoi(it.ID[4:]); return n%mod == 3 }
	}
	recall := map[*Engine][3]float64{}
	for _, e := range []*Engine{scan, graphEng} {
		var r [3]float64
		for j, pred := range []Predicate{nil, shard(10), shard(100)} {
			r[j] = recallVs(exact, e, qs, pred)
		}
		recall[e] = r
	}
	shard3 := domain.Wishlist{Mode: domain.ModeSemantic, Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}}
	for _, tc := range []struct {
		name string
		e    *Engine
		w    domain.Wishlist
	}{
		{"scan", scan, domain.Wishlist{Mode: domain.ModeSemantic}},
		{"graph", graphEng, domain.Wishlist{Mode: domain.ModeSemantic}},
		{"scan-filtered", scan, shard3},
		{"graph-filtered", graphEng, shard3},
		{"scan-hybrid", scan, domain.Wishlist{Mode: domain.ModeHybrid}},
		{"graph-hybrid", graphEng, domain.Wishlist{Mode: domain.ModeHybrid}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				hits, err := tc.e.Search(ctx, "c", domain.Query{Text: "q", Limit: 10, Wishlist: tc.w})
				if err != nil || len(hits) != 10 {
					b.Fatal(len(hits), err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			r := recall[tc.e]
			b.ReportMetric(r[0], "recall@10")
			b.ReportMetric(r[1], "recall@10-f10%")
			b.ReportMetric(r[2], "recall@10-f1%")
			if tc.e == graphEng {
				b.ReportMetric(buildWall.Seconds()/hundredK, "build-s/100k")
				b.ReportMetric(buildCPU.Seconds()/hundredK, "build-cpu-s/100k")
				b.ReportMetric(graphHeap/hundredK, "graph-MiB/100k")
				b.ReportMetric(float64(graphEng.cfg.GraphWorkers), "build-goroutines")
				b.ReportMetric(float64(st.Size())/(1<<20)/hundredK, "file-MiB/100k")
				b.ReportMetric(fileWrite.Seconds()/hundredK, "file-write-s/100k")
				b.ReportMetric(fileReadWall.Seconds()/hundredK, "file-read-s/100k")
				b.ReportMetric(fileReadCPU.Seconds()/hundredK, "file-read-cpu-s/100k")
			}
		})
	}
}

// flatHeap is the heap of a scan index over src, in MiB.
func flatHeap(b *testing.B, src *fakeSource, dim int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{ApproxMin: 1, GraphMin: -1})
	if _, err := e.load(context.Background(), "c"); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	return float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
}

// recallVs is the mean share of exact's dense top 10 that e finds.
func recallVs(exact, e *Engine, qs [][]float32, pred Predicate) float64 {
	found, all := 0, 0
	for _, q := range qs {
		want := map[ref]bool{}
		for _, c := range dense(exact, q, 10, pred) {
			want[c.ref] = true
		}
		all += len(want)
		for _, c := range dense(e, q, 10, pred) {
			if want[c.ref] {
				found++
			}
		}
	}
	return float64(found) / float64(max(all, 1))
}

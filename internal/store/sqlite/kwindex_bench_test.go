package sqlite_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"capsuled/internal/store/sqlite"
)

// BenchmarkKeywordIndex compares the in-process keyword index with FTS5's
// own scoring on one capsule, on SciFact's test queries (1,109): per query,
// the terms' bounds and the top 100 (what a hybrid query asks for, the
// engine's KeywordTop), and the top 10 (keyword mode). It reports the
// process CPU time per query (steadier than wall time on a shared machine)
// and the wall p50 / p99 for each path, the index's build time and CPU, and
// its heap per 100,000 chunks; and it fails unless both paths streamed the
// same hits, scores and bounds, to the last bit, for every query.
//
// By default the capsule is SciFact's corpus (about 12,000 chunks, indexed
// in a temporary database; CAPSULED_BENCH_DB keeps it); with
// CAPSULED_BENCH_DB and CAPSULED_BENCH_CAPSULE it is that capsule of that
// database (for example the one `capsuled bench scale` builds, capsule
// "scale", at 270,894 chunks: copy the file first, the benchmark opens it
// for writing); CAPSULED_BENCH_QUERIES keeps the first queries only (FTS5
// takes about a quarter of a CPU-second a query at that size):
//
//	CAPSULED_BENCH_DB=/tmp/kwcopy/capsuled.db CAPSULED_BENCH_CAPSULE=scale CAPSULED_BENCH_QUERIES=200 go test -run '^$' -bench KeywordIndex -benchtime 1x -timeout 1h ./internal/store/sqlite
func BenchmarkKeywordIndex(b *testing.B) {
	ctx := context.Background()
	path := os.Getenv("CAPSULED_BENCH_DB")
	capsule := os.Getenv("CAPSULED_BENCH_CAPSULE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "capsuled.db")
	}
	var idxDB *sqlite.DB
	var queries [][]string
	if capsule == "" {
		capsule = "bench"
		_, idxDB, queries = loadSciFactAt(b, path)
	} else {
		queries = sciFactQueries(b)
		var err error
		if idxDB, err = sqlite.Open(ctx, path); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { idxDB.Close() })
	}
	if n, err := strconv.Atoi(os.Getenv("CAPSULED_BENCH_QUERIES")); err == nil && n > 0 && n < len(queries) {
		queries = queries[:n]
	}
	ref, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ref.Close() })
	ref.SetKeywordIndexMin(math.MaxInt)
	idxDB.SetKeywordIndexMin(1)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	t0, c0 := time.Now(), cpuTime()
	idx := idxDB.Capsules()
	if err := idx.KeywordReady(ctx, capsule); err != nil {
		b.Fatal(err)
	}
	build, buildCPU := time.Since(t0), cpuTime()-c0
	runtime.GC()
	runtime.ReadMemStats(&m1)
	docs, _, postings, bytes := sqlite.KeywordIndexSizes(ctx, idxDB, capsule)
	if docs == 0 {
		b.Fatal("no index built")
	}
	heap := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / (1 << 20)
	// What each path streamed, by depth: the two must be equal to the bit.
	streamed := map[string][]string{}
	for _, path := range []struct {
		name string
		st   *sqlite.CapsuleStore
	}{{"index", idx}, {"fts5", ref.Capsules()}} {
		for _, k := range []int{100, 10} {
			b.Run(path.name+"/top"+map[int]string{100: "100", 10: "10"}[k], func(b *testing.B) {
				var lat []time.Duration
				cpu0 := cpuTime()
				b.ResetTimer()
				for range b.N {
					for _, ts := range queries {
						if len(ts) == 0 {
							continue
						}
						q0 := time.Now()
						bounds, err := path.st.KeywordBounds(ctx, capsule, ts)
						if err != nil {
							b.Fatal(err)
						}
						var got strings.Builder
						n := 0
						if err := path.st.KeywordTop(ctx, capsule, ts, bounds, nil, k, func(id string, idx int, score float64) bool {
							fmt.Fprintf(&got, "%s/%d %x ", id, idx, math.Float64bits(score))
							n++
							return n < k
						}); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(q0))
						fmt.Fprintf(&got, "%x", bounds)
						key := path.name + strconv.Itoa(k)
						streamed[key] = append(streamed[key], got.String())
					}
				}
				cpu := cpuTime() - cpu0
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/query")
				if path.name == "fts5" {
					ix, fts := streamed["index"+strconv.Itoa(k)], streamed["fts5"+strconv.Itoa(k)]
					for i := range min(len(ix), len(fts)) {
						if ix[i] != fts[i] {
							b.Fatalf("query %d, top %d: the index and FTS5 differ:\n%s\n%s", i, k, ix[i], fts[i])
						}
					}
				}
				if path.name == "index" {
					b.ReportMetric(build.Seconds(), "build-s")
					b.ReportMetric(buildCPU.Seconds(), "build-cpu-s")
					b.ReportMetric(heap*100000/float64(docs), "heap-MiB/100k-chunks")
					b.ReportMetric(float64(bytes)/float64(max(postings, 1)), "bytes/posting")
					b.ReportMetric(float64(postings)/float64(docs), "postings/chunk")
				}
			})
		}
	}
}

package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"capsuled/internal/store/postgres"
)

// TestScale runs `capsuled bench scale` on a small capsule end to end: the
// build through the capsule service, the in-process figures, and a real
// `capsuled serve` process (built here) timed to its first answer; then
// again on the same data directory, which reuses the capsule; and, with
// CAPSULED_TEST_POSTGRES, on PostgreSQL through two server processes.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds capsuled and starts server processes")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "capsuled")
	if out, err := exec.Command("go", "build", "-o", bin, "capsuled/cmd/capsuled").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	common := []string{"scale", "--chunks", "150", "--queries", "5", "--recall-queries", "3", "--server-bin", bin, "--json",
		"--scifact", "testdata/hotpot", "--hotpotqa", "testdata/hotpot", "--ingest-workers", "2"}
	run := func(t *testing.T, extra ...string) map[string]any {
		t.Helper()
		code, stdout, stderr := runBench(t, append(common, extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var res map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("last line is not JSON: %v\n%s", err, stdout)
		}
		return res
	}
	check := func(t *testing.T, res map[string]any, servers int) {
		t.Helper()
		if res["vectors"] != "synthetic" || res["chunks"].(float64) < 50 {
			t.Errorf("vectors %v, chunks %v", res["vectors"], res["chunks"])
		}
		for _, k := range []string{"index_load_s", "hybrid_p50_ms", "hybrid_p99_ms", "hybrid_max_ms", "hybrid_filtered_p50_ms", "semantic_p50_ms",
			"semantic_filtered_p99_ms", "keyword_p50_ms", "keyword_filtered_p99_ms", "http_hybrid_p50_ms", "http_hybrid_filtered_p99_ms",
			"http_embed_lookup_p50_ms", "http_hybrid_max_ms", "bench_rss_mb", "load_avg_start"} {
			if _, ok := res[k].(float64); !ok {
				t.Errorf("%s: %v, want a number", k, res[k])
			}
		}
		// A capsule this small is searched exactly: recall is 1.
		if res["dense_recall_at_10"] != 1.0 || res["dense_recall_at_10_filtered"] != 1.0 {
			t.Errorf("recall %v, filtered %v; want 1 (exact search)", res["dense_recall_at_10"], res["dense_recall_at_10_filtered"])
		}
		for _, k := range []string{"server_cold_start_s", "server_rss_mb", "server_rss_peak_mb"} {
			l, _ := res[k].([]any)
			if len(l) != servers {
				t.Fatalf("%s: %v, want %d values", k, res[k], servers)
			}
			for _, x := range l {
				if f, _ := x.(float64); f <= 0 {
					t.Errorf("%s: %v", k, res[k])
				}
			}
		}
	}

	t.Run("sqlite", func(t *testing.T) {
		data := t.TempDir()
		res := run(t, "--data-dir", data)
		check(t, res, 1)
		if res["reused_capsule"] != false || res["ingest_chunks_per_s"].(float64) <= 0 {
			t.Errorf("first run: reused %v, ingest %v", res["reused_capsule"], res["ingest_chunks_per_s"])
		}
		if cpu, _ := res["ingest_cpu_ms_per_chunk"].(float64); cpu <= 0 || cpu > 1000 {
			t.Errorf("first run: ingest_cpu_ms_per_chunk %v, want the process's CPU per ingested chunk", res["ingest_cpu_ms_per_chunk"])
		}
		for _, k := range []string{"server_rss_anon_mb", "server_rss_file_mb", "bench_go_heap_inuse_mb"} {
			if _, ok := res[k].(float64); !ok {
				t.Errorf("%s: %v, want a number", k, res[k])
			}
		}
		heap := filepath.Join(t.TempDir(), "heap.pprof")
		again := run(t, "--data-dir", data, "--graph-ef", "32,64", "--heap-profile", heap)
		check(t, again, 1)
		if b, err := os.ReadFile(heap); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("--heap-profile: %d bytes (%v), want a gzipped profile", len(b), err)
		}
		for _, k := range []string{"graph_ef32_dense_recall_at_10", "graph_ef64_semantic_p50_ms", "graph_ef64_hybrid_filtered_cpu_ms"} {
			if _, ok := again[k].(float64); !ok {
				t.Errorf("--graph-ef: %s: %v, want a number", k, again[k])
			}
		}
		if again["reused_capsule"] != true || again["chunks"] != res["chunks"] {
			t.Errorf("second run: reused %v, chunks %v (first %v)", again["reused_capsule"], again["chunks"], res["chunks"])
		}
		// Other vectors than the capsule's: refused, the capsule kept.
		if code, _, stderr := runBench(t, append(common, "--data-dir", data, "--vectors", "synthetic-flat")...); code != 1 || stderr == "" {
			t.Errorf("other vectors: exit %d, stderr %q; want 1 and a message", code, stderr)
		}
		// A heap profile that cannot be written: an error, not a run that
		// says nothing of it.
		if code, _, stderr := runBench(t, append(common, "--data-dir", data, "--replicas", "0", "--heap-profile", filepath.Join(data, "no", "such", "dir", "heap.pprof"))...); code != 1 || !strings.Contains(stderr, "heap profile") {
			t.Errorf("unwritable --heap-profile: exit %d, stderr %q; want 1 and a message", code, stderr)
		}
		if third := run(t, "--data-dir", data, "--replicas", "0"); third["reused_capsule"] != true {
			t.Errorf("after the refused run: reused %v", third["reused_capsule"])
		}
	})

	t.Run("postgres, two replicas", func(t *testing.T) {
		base := os.Getenv("CAPSULED_TEST_POSTGRES")
		if base == "" {
			t.Skip("CAPSULED_TEST_POSTGRES is not set: run `bash .ci/postgres.sh` and source .cache/pg/env.sh")
		}
		store := scaleSchema(t, base)
		res := run(t, "--store", store, "--replicas", "2", "--defer-indexes", "--index-memory", "64MB")
		check(t, res, 2)
		if sb, _ := res["pg_shared_buffers"].(string); sb == "" {
			t.Errorf("pg_shared_buffers: %v, want the server's setting", res["pg_shared_buffers"])
		}
		if _, ok := res["pg_huge_pages"].(string); !ok {
			t.Errorf("pg_huge_pages: %v, want a string", res["pg_huge_pages"])
		}
		for _, k := range []string{"index_build_s", "index_build_chunks_hnsw_s", "index_build_chunks_tsv_s"} {
			if f, _ := res[k].(float64); f <= 0 {
				t.Errorf("%s: %v, want a time", k, res[k])
			}
		}
		again := run(t, "--store", store, "--replicas", "0", "--ef-search", "200")
		if again["reused_capsule"] != true || again["index_build_s"] != nil {
			t.Errorf("second run: reused %v, index build %v; want the capsule and its indexes reused", again["reused_capsule"], again["index_build_s"])
		}
		for _, k := range []string{"ef200_dense_recall_at_10", "ef200_dense_recall_at_10_filtered", "ef200_semantic_p50_ms", "ef200_hybrid_filtered_p99_ms"} {
			if _, ok := again[k].(float64); !ok {
				t.Errorf("%s: %v, want a number", k, again[k])
			}
		}
		// Indexes left deferred: reported and not built without
		// --defer-indexes (semantic search scans), built with it.
		pg, err := postgres.Open(context.Background(), store, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = pg.DeferIndexes(context.Background())
		pg.Close()
		if err != nil {
			t.Fatal(err)
		}
		third := run(t, "--store", store, "--replicas", "0", "--modes", "semantic")
		if l, _ := third["indexes_deferred"].([]any); len(l) < 2 || third["dense_recall_at_10"] != 1.0 {
			t.Errorf("deferred indexes: reported %v, recall %v; want them listed, and exact search", third["indexes_deferred"], third["dense_recall_at_10"])
		}
		fourth := run(t, "--store", store, "--replicas", "0", "--defer-indexes")
		if fourth["indexes_deferred"] != nil || fourth["index_build_s"] == nil {
			t.Errorf("with --defer-indexes: deferred %v, build %v; want them built", fourth["indexes_deferred"], fourth["index_build_s"])
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"scale", "--replicas", "2"},                                // two replicas need PostgreSQL
			{"scale", "--vectors", "random"},                            // model or synthetic
			{"scale", "--defer-indexes"},                                // PostgreSQL only
			{"scale", "--ef-search", "200"},                             // PostgreSQL only
			{"scale", "--store", "postgres://x", "--ef-search", "2000"}, // at most 1000
			{"scale", "--store", "mysql://x"},                           // sqlite or postgres://
			{"scale", "--chunks", "0"},                                  // at least one chunk
			{"scale", "--scifact", "/nowhere"},                          // unreadable passages
		} {
			if code, _, stderr := runBench(t, args...); code != 1 || stderr == "" {
				t.Errorf("bench %q: exit %d, stderr %q; want 1 and a message", args, code, stderr)
			}
		}
	})
}

// scaleSchema makes a fresh schema of the PostgreSQL database at base and
// returns base with it as the search path; the schema is dropped after.
func scaleSchema(t *testing.T, base string) string {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "scale_" + hex.EncodeToString(b)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
		conn.Close(ctx)
	})
	return u.String()
}

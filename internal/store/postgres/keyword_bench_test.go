package postgres_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
	"capsuled/internal/terms"
)

// readGzField reads the string field of the first n lines of a gzipped
// JSONL file that have it.
func readGzField(b *testing.B, path string, n int, field string) []string {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var out []string
	for sc.Scan() && len(out) < n {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			if s, _ := m[field].(string); s != "" {
				out = append(out, s)
			}
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkKeywordSmallCapsule times the BM25 keyword search of a hybrid
// query (the best 100 chunks) in a capsule that is a small part of the
// index: the capsule "small", 2,000 SciFact passages of one chunk each,
// beside whatever the database named by CAPSULED_BENCH_PG (a postgres://
// URL whose search_path names an existing capsuled schema, e.g. one
// `capsuled bench scale` built) already holds. The capsule is added the
// first time, then ANALYZE runs so the planner's statistics know its share.
// Each iteration runs the first 50 queries of SciFact's queries file (train
// and test alike) and logs their p50 and p99. SciFact is read from ../shared/data/beir/scifact, or
// CAPSULED_SCIFACT_DIR.
func BenchmarkKeywordSmallCapsule(b *testing.B) {
	url := os.Getenv("CAPSULED_BENCH_PG")
	if url == "" {
		b.Skip("CAPSULED_BENCH_PG names no database")
	}
	dir := os.Getenv("CAPSULED_SCIFACT_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "data", "beir", "scifact")
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := db.Capsules()
	var have int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM capsules WHERE name = 'small'").Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == 0 {
		t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: "small", CreatedAt: t0}); err != nil {
			b.Fatal(err)
		}
		for i, tx := range readGzField(b, filepath.Join(dir, "corpus.jsonl.gz"), 2000, "text") {
			addTextItem(b, st, "small", fmt.Sprintf("itm_small_%04d", i), nil, t0, tx)
		}
		if _, err := db.Pool().Exec(ctx, "ANALYZE chunks"); err != nil {
			b.Fatal(err)
		}
	}
	qs := readGzField(b, filepath.Join(dir, "queries.jsonl.gz"), 50, "text")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ds := make([]time.Duration, 0, len(qs))
		hits := 0
		for _, q := range qs {
			start := time.Now()
			n := 0
			if err := st.KeywordN(ctx, "small", terms.Capsule(q), 100, func(string, int, float64) bool { n++; return n < 100 }); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
			hits += n
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.Logf("%d queries, %d hits: p50 %.1f ms, p99 %.1f ms", len(qs), hits,
			float64(ds[len(ds)/2].Microseconds())/1000, float64(ds[len(ds)*99/100].Microseconds())/1000)
	}
}

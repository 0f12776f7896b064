package sqlite_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
	"capsuled/internal/terms"
)

// scifactDir is the BEIR SciFact folder of the shared benchmark data
// (CAPSULED_SCIFACT overrides it); benchmarks that need it skip without it.
func scifactDir() string {
	if d := os.Getenv("CAPSULED_SCIFACT"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "..", "shared", "data", "beir", "scifact")
}

// readGzLines calls fn with each line of a gzipped JSONL file.
func readGzLines(tb testing.TB, path string, fn func([]byte)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("no benchmark data: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
}

// wordChunks splits text into chunks of about size words overlapping by
// overlap words (the benchmark's stand-in for the tokenizer-aware chunker:
// SciFact's 5,183 documents come out at about 12,000 chunks either way).
func wordChunks(text string, size, overlap int) []string {
	w := strings.Fields(text)
	var out []string
	for start := 0; ; start += size - overlap {
		end := min(start+size, len(w))
		out = append(out, strings.Join(w[start:end], " "))
		if end == len(w) {
			return out
		}
	}
}

// startItem moves a queued item to indexing through whichever lifecycle
// call the store has (StartItem, by a job, or ClaimItem, by polling).
func startItem(ctx context.Context, st any, id, hash string, at time.Time) (domain.Item, error) {
	switch s := st.(type) {
	case interface {
		StartItem(ctx context.Context, id, hash string, at time.Time) (domain.Item, error)
	}:
		return s.StartItem(ctx, id, hash, at)
	case interface {
		ClaimItem(ctx context.Context, at time.Time) (domain.Item, error)
	}:
		return s.ClaimItem(ctx, at)
	}
	return domain.Item{}, fmt.Errorf("%T can start no item", st)
}

// sciFactQueries returns the terms of SciFact's test queries.
func sciFactQueries(b *testing.B) [][]string {
	var queries [][]string
	readGzLines(b, filepath.Join(scifactDir(), "queries.jsonl.gz"), func(line []byte) {
		var q struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(line, &q) == nil {
			queries = append(queries, terms.Capsule(q.Text))
		}
	})
	return queries
}

// loadSciFactAt indexes SciFact's corpus (text only, no vectors) into
// capsule "bench" of the database at path and returns the store, the
// database and the test queries' terms; a database there that already has
// the capsule is reused as it is.
func loadSciFactAt(b *testing.B, path string) (*sqlite.CapsuleStore, *sqlite.DB, [][]string) {
	b.Helper()
	ctx := context.Background()
	dir := scifactDir()
	queries := sciFactQueries(b)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	st := db.Capsules()
	if _, err := st.GetCapsule(ctx, "bench"); err == nil {
		return st, db, queries
	}
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "bench", CreatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	n, chunks := 0, 0
	readGzLines(b, filepath.Join(dir, "corpus.jsonl.gz"), func(line []byte) {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			b.Fatal(err)
		}
		n++
		hash := fmt.Sprintf("h%d", n)
		id := fmt.Sprintf("itm_%06d", n)
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: "bench", Kind: domain.ItemText,
			URI: d.ID, ContentHash: hash, TimeAdded: t0, TimeUpdated: t0}); err != nil {
			b.Fatal(err)
		}
		it, err := startItem(ctx, st, id, hash, t0)
		if err != nil {
			b.Fatal(err)
		}
		var cs []domain.Chunk
		for i, c := range wordChunks(d.Title+"\n\n"+d.Text, 120, 20) {
			// A vector of the default model's width makes the chunk rows as
			// large as real ones (their values do not matter here).
			vec := make([]float32, 384)
			vec[(n+i)%384] = 1
			cs = append(cs, domain.Chunk{Idx: i, Text: c, End: len(c), Vector: vec})
		}
		chunks += len(cs)
		if _, err := st.CompleteItem(ctx, it.ID, hash, d.Text, cs, t0); err != nil {
			b.Fatal(err)
		}
	})
	b.Logf("SciFact: %d documents, %d chunks, %d queries", n, chunks, len(queries))
	return st, db, queries
}

// BenchmarkKeywordSciFact measures the keyword side of a capsule query on
// SciFact's full corpus (its 1,109 queries): the top 100 BM25 chunks of each
// query (what a hybrid query asks for), and the query-relative bound (each
// term's best single-term score), each beside the plain form it replaced
// (every match scored, joined and sorted in SQL; one such query per term for
// the bound). It reports the per-query wall p50 and p99 and the process CPU
// time per query (steadier on a shared machine). CAPSULED_BENCH_DB keeps the
// indexed corpus in that file between runs.
//
//	go test -run '^$' -bench KeywordSciFact -benchtime 1x ./internal/store/sqlite
func BenchmarkKeywordSciFact(b *testing.B) {
	path := os.Getenv("CAPSULED_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "capsuled.db")
	}
	st, db, queries := loadSciFactAt(b, path)
	ctx := context.Background()
	var capID int64
	if err := db.Read().QueryRowContext(ctx, "SELECT id FROM capsules WHERE name = 'bench'").Scan(&capID); err != nil {
		b.Fatal(err)
	}
	// plain is the former keyword query: every match scored, joined and
	// sorted.
	plain := func(terms []string, n int) error {
		q := make([]string, len(terms))
		for i, t := range terms {
			q[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
		rows, err := db.Read().QueryContext(ctx, `SELECT k.item_id, k.idx, -bm25(chunks_fts, 1.0, 0.0) AS s
			FROM chunks_fts JOIN chunks k ON k.id = chunks_fts.rowid WHERE chunks_fts MATCH ? ORDER BY s DESC, k.item_id, k.idx`,
			fmt.Sprintf("cap : c%d AND body : (%s)", capID, strings.Join(q, " OR ")))
		if err != nil {
			return err
		}
		defer rows.Close()
		for i := 0; i < n && rows.Next(); i++ {
		}
		return rows.Err()
	}
	run := func(b *testing.B, one func(terms []string) error) {
		var lat []time.Duration
		cpu0 := cpuTime()
		b.ResetTimer()
		for range b.N {
			for _, terms := range queries {
				if len(terms) == 0 {
					continue
				}
				t0 := time.Now()
				if err := one(terms); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
		}
		cpu := cpuTime() - cpu0
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/query")
	}
	b.Run("top100", func(b *testing.B) {
		run(b, func(terms []string) error {
			n := 0
			return st.Keyword(ctx, "bench", terms, func(string, int, float64) bool { n++; return n < 100 })
		})
	})
	b.Run("top100-plain", func(b *testing.B) {
		run(b, func(terms []string) error { return plain(terms, 100) })
	})
	b.Run("bounds", func(b *testing.B) {
		run(b, func(terms []string) error {
			_, err := st.KeywordBounds(ctx, "bench", terms)
			return err
		})
	})
	b.Run("bounds-plain", func(b *testing.B) {
		run(b, func(terms []string) error {
			for _, t := range terms {
				if err := plain([]string{t}, 1); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// cpuTime is the CPU time the process has used, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

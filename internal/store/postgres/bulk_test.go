package postgres_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// searchIndexes are the indexes DeferIndexes drops.
var searchIndexes = []string{"chunks_hnsw", "chunks_bm25", "chunks_tsv"}

// indexDefs returns the definitions of the chunks' search indexes that
// exist in the store's schema.
func indexDefs(t *testing.T, db *postgres.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range searchIndexes {
		var d *string
		if err := db.Pool().QueryRow(context.Background(), "SELECT pg_get_indexdef(to_regclass($1))", n).Scan(&d); err != nil {
			t.Fatal(err)
		}
		if d != nil {
			out[n] = *d
		}
	}
	return out
}

// TestDeferIndexes drops the chunks' search indexes for a bulk load and
// builds them again: while they are deferred, chunks are written and dense
// search answers exactly (a scan); a store opened meanwhile still ranks
// keywords by BM25; a build that fails keeps its index deferred; the rebuilt
// indexes have their old definitions and searches give what they gave.
func TestDeferIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := freshSchema(t)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Capsules()
	before := indexDefs(t, db)
	if before["chunks_hnsw"] == "" || before["chunks_tsv"] == "" {
		t.Fatalf("indexes before: %v", before)
	}

	dropped, err := db.DeferIndexes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != len(before) {
		t.Fatalf("dropped %v, want the %d indexes %v", dropped, len(before), before)
	}
	if got := indexDefs(t, db); len(got) != 0 {
		t.Fatalf("after DeferIndexes: %v remain", got)
	}
	if again, err := db.DeferIndexes(ctx); err != nil || len(again) != 0 {
		t.Fatalf("deferring again: %v, %v; want nothing dropped", again, err)
	}
	if _, ok := before["chunks_bm25"]; ok {
		other, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if other.FullText() != postgres.FullTextBM25 {
			t.Errorf("a store opened while chunks_bm25 is deferred ranks by %s", other.FullText())
		}
		other.Close()
	}

	// Written while deferred: above smallCapsule chunks, so that searches
	// take the index path once it exists.
	r := rand.New(rand.NewPCG(7, 8))
	vec := clustered(r, 384)
	items := fillDense(t, st, vec, "bulk", 50, 50, func(i int) map[string]any { return map[string]any{"group": float64(i % 10)} })
	q := vec()
	exact := exactTop(items, q, 10, nil)
	got, err := st.DenseTopK(ctx, "bulk", q, 10, domain.Wishlist{})
	if err != nil {
		t.Fatal(err)
	}
	if recall(t, items, q, got, exact) != 1 {
		t.Errorf("while deferred, dense search is not exact: %v, want %v", got, exact)
	}

	if _, err := db.BuildIndexes(ctx, postgres.BuildOptions{MaintenanceWorkMem: "lots"}); err == nil || !strings.Contains(err.Error(), "maintenance_work_mem") {
		t.Fatalf("build with maintenance_work_mem lots: %v, want an error naming it", err)
	}
	if got := indexDefs(t, db); len(got) != 0 {
		t.Fatalf("a failed build left %v", got)
	}

	built, err := db.BuildIndexes(ctx, postgres.BuildOptions{Workers: 2, MaintenanceWorkMem: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != len(before) {
		t.Errorf("built %v, want %d indexes", built, len(before))
	}
	for _, b := range built {
		if b.Took <= 0 {
			t.Errorf("%s: took %v", b.Name, b.Took)
		}
	}
	after := indexDefs(t, db)
	for n, d := range before {
		if after[n] != d {
			t.Errorf("%s rebuilt as %q, was %q", n, after[n], d)
		}
	}
	if again, err := db.BuildIndexes(ctx, postgres.BuildOptions{}); err != nil || len(again) != 0 {
		t.Errorf("building again: %v, %v; want nothing built", again, err)
	}
	got, err = st.DenseTopK(ctx, "bulk", q, 10, domain.Wishlist{})
	if err != nil {
		t.Fatal(err)
	}
	if rc := recall(t, items, q, got, exact); rc < 0.9 {
		t.Errorf("after the build: recall %.2f against exact", rc)
	}
	if _, ok := before["chunks_bm25"]; ok {
		n := 0
		if err := st.KeywordWhere(ctx, "bulk", []string{"chunk"}, 10, domain.Wishlist{}, func(string, int, float64) bool { n++; return true }); err != nil || n == 0 {
			t.Errorf("BM25 keyword search after the build: %d hits, %v", n, err)
		}
	}
}

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

// TestSetHNSW changes chunks_hnsw's build parameters: on a built index by
// building a replacement beside it and swapping it in (dense search goes on
// through the index), on a deferred one by changing the definition that
// BuildIndexes builds; the parameters are kept by a later defer and build;
// parameters pgvector refuses, and an unchanged set, build nothing.
func TestSetHNSW(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	st := db.Capsules()
	hnsw := func() postgres.HNSWParams {
		t.Helper()
		p, err := db.HNSW(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := hnsw(); p != postgres.DefaultHNSW {
		t.Fatalf("a new store's chunks_hnsw: %v, want %v", p, postgres.DefaultHNSW)
	}
	r := rand.New(rand.NewPCG(9, 10))
	vec := clustered(r, 384)
	items := fillDense(t, st, vec, "hnsw", 50, 50, func(int) map[string]any { return nil })
	q := vec()
	exact := exactTop(items, q, 10, nil)

	for _, bad := range []postgres.HNSWParams{{M: 1, EfConstruction: 64}, {M: 16, EfConstruction: 20}, {M: 101, EfConstruction: 400}, {M: 16, EfConstruction: 1001}} {
		if built, err := db.SetHNSW(ctx, bad, postgres.BuildOptions{}); err == nil || len(built) != 0 {
			t.Errorf("SetHNSW(%v): %v, %v; want an error", bad, built, err)
		}
	}
	if built, err := db.SetHNSW(ctx, postgres.DefaultHNSW, postgres.BuildOptions{}); err != nil || len(built) != 0 {
		t.Errorf("SetHNSW with the index's own parameters: %v, %v; want nothing built", built, err)
	}

	p := postgres.HNSWParams{M: 24, EfConstruction: 128}
	built, err := db.SetHNSW(ctx, p, postgres.BuildOptions{Workers: 2, MaintenanceWorkMem: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 1 || built[0].Name != "chunks_hnsw" {
		t.Errorf("SetHNSW on the built index built %v, want chunks_hnsw", built)
	}
	if got := hnsw(); got != p {
		t.Errorf("after SetHNSW: %v, want %v", got, p)
	}
	def := indexDefs(t, db)["chunks_hnsw"]
	if !strings.Contains(def, "m='24'") || !strings.Contains(def, "ef_construction='128'") || !strings.Contains(def, "WHERE") {
		t.Errorf("rebuilt definition %q", def)
	}
	var leftover bool
	if err := db.Pool().QueryRow(ctx, "SELECT to_regclass('chunks_hnsw_rebuild') IS NOT NULL").Scan(&leftover); err != nil || leftover {
		t.Errorf("the replacement's name is still taken: %v, %v", leftover, err)
	}
	got, err := st.DenseTopK(ctx, "hnsw", q, 10, domain.Wishlist{})
	if err != nil {
		t.Fatal(err)
	}
	if rc := recall(t, items, q, got, exact); rc < 0.9 {
		t.Errorf("after the rebuild: recall %.2f against exact", rc)
	}
	// Deferred and built again: the same parameters.
	if _, err := db.DeferIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := hnsw(); got != p {
		t.Errorf("deferred: %v, want %v", got, p)
	}
	p2 := postgres.HNSWParams{M: 20, EfConstruction: 80}
	if built, err := db.SetHNSW(ctx, p2, postgres.BuildOptions{}); err != nil || len(built) != 0 {
		t.Fatalf("SetHNSW on the deferred index: %v, %v; want the definition changed, nothing built", built, err)
	}
	if _, err := db.BuildIndexes(ctx, postgres.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := hnsw(); got != p2 {
		t.Errorf("built after SetHNSW while deferred: %v, want %v", got, p2)
	}
	got, err = st.DenseTopK(ctx, "hnsw", q, 10, domain.Wishlist{})
	if err != nil {
		t.Fatal(err)
	}
	if rc := recall(t, items, q, got, exact); rc < 0.9 {
		t.Errorf("after the deferred build: recall %.2f against exact", rc)
	}
}

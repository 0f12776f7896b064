package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// TestServicesShareChanges runs two capsule services, as two replicas do, on
// one database and one blob directory: an item added, updated, replaced or
// deleted through one is seen by the other's next query, in every mode and
// through filters, though the other never heard of the change: neither
// holds the capsule's vectors or items (dense and keyword search run in the
// database).
func TestServicesShareChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := freshSchema(t)
	dir := t.TempDir()
	replica := func() *capsule.Service {
		db, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc, err := capsule.New(capsule.Config{Store: db.Capsules(), Embedder: capsule.NewFakeEmbedder(32), DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		return svc
	}
	a, b := replica(), replica()
	if _, err := a.CreateCapsule(ctx, "shared", ""); err != nil {
		t.Fatal(err)
	}
	uris := func(svc *capsule.Service, text string, w domain.Wishlist) []string {
		t.Helper()
		hits, err := svc.Query(ctx, "shared", domain.Query{Text: text, Limit: 10, Wishlist: w})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Item.URI)
		}
		return out
	}
	// b loads its index (empty) before anything is added.
	if got := uris(b, "zebra", domain.Wishlist{}); len(got) != 0 {
		t.Fatalf("empty capsule: %v", got)
	}
	add := func(uri, text string, meta map[string]any) domain.Item {
		t.Helper()
		it, _, err := a.AddItem(ctx, "shared", capsule.NewItem{Kind: domain.ItemText, Text: text, URI: uri, Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		if it, err = a.WaitItem(ctx, "shared", it.ID, 30*time.Second); err != nil || it.Status != domain.StatusReady {
			t.Fatalf("%s: %+v %v", uri, it, err)
		}
		return it
	}
	add("z1", "The zebra crosses the savanna.", map[string]any{"lang": "en"})
	for _, mode := range []domain.SearchMode{domain.ModeKeyword, domain.ModeSemantic, domain.ModeHybrid} {
		if got := uris(b, "zebra savanna", domain.Wishlist{Mode: mode}); len(got) != 1 || got[0] != "z1" {
			t.Fatalf("%s through the other replica: %v", mode, got)
		}
	}
	// A metadata update through a is seen by b's filters.
	if _, _, err := a.AddItem(ctx, "shared", capsule.NewItem{Kind: domain.ItemText, Text: "The zebra crosses the savanna.",
		URI: "z1", Metadata: map[string]any{"lang": "fr"}}); err != nil {
		t.Fatal(err)
	}
	fr := domain.Wishlist{Mode: domain.ModeSemantic, Metadata: []domain.MetadataFilter{{Key: "lang", Op: domain.OpEq, Value: "fr"}}}
	if got := uris(b, "zebra", fr); len(got) != 1 {
		t.Fatalf("metadata update through the other replica: %v", got)
	}
	// Content replaced through a: b's dense search finds the new text's
	// chunks and none of the old (the old chunks are gone from the store).
	wait := func(it domain.Item) {
		t.Helper()
		if it, err := a.WaitItem(ctx, "shared", it.ID, 30*time.Second); err != nil || it.Status != domain.StatusReady {
			t.Fatalf("%+v %v", it, err)
		}
	}
	it, _, err := a.AddItem(ctx, "shared", capsule.NewItem{Kind: domain.ItemText, Text: "The giraffe eats acacia leaves.",
		URI: "z1", Metadata: map[string]any{"lang": "fr"}})
	if err != nil {
		t.Fatal(err)
	}
	wait(it)
	for _, mode := range []domain.SearchMode{domain.ModeSemantic, domain.ModeHybrid} {
		hits, err := b.Query(ctx, "shared", domain.Query{Text: "giraffe acacia", Limit: 10, Wishlist: domain.Wishlist{Mode: mode}})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Content != "The giraffe eats acacia leaves." {
			t.Fatalf("%s after the content changed through the other replica: %+v", mode, hits)
		}
	}
	// Items added through a, some filtered out, are found by b's filtered
	// dense search on its next query.
	var herd []domain.Item
	for i := range 12 {
		lang := "de"
		if i%4 == 0 {
			lang = "en"
		}
		it, _, err := a.AddItem(ctx, "shared", capsule.NewItem{Kind: domain.ItemText, Text: fmt.Sprintf("Zebra herd number %d grazes.", i),
			URI: fmt.Sprintf("herd%d", i), Metadata: map[string]any{"lang": lang}})
		if err != nil {
			t.Fatal(err)
		}
		wait(it)
		herd = append(herd, it)
	}
	en := domain.Wishlist{Mode: domain.ModeSemantic, Metadata: []domain.MetadataFilter{{Key: "lang", Op: domain.OpEq, Value: "en"}}}
	got := uris(b, "zebra herd", en)
	if slices.Sort(got); fmt.Sprint(got) != "[herd0 herd4 herd8]" {
		t.Fatalf("filtered dense search through the other replica: %v", got)
	}
	// b holds no vectors and no items: each query asks the database.
	if items, vectors := b.Engine().Stats("shared"); items != 0 || vectors != 0 {
		t.Fatalf("replica b holds %d items, %d vectors in memory", items, vectors)
	}
	// A delete through a is gone from b's semantic results too.
	if err := a.DeleteItem(ctx, "shared", it.ID); err != nil {
		t.Fatal(err)
	}
	if got := uris(b, "giraffe acacia", domain.Wishlist{Mode: domain.ModeSemantic}); slices.Contains(got, "z1") {
		t.Fatalf("deleted item through the other replica: %v", got)
	}
	for _, it := range herd {
		if err := a.DeleteItem(ctx, "shared", it.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := uris(b, "zebra herd", domain.Wishlist{Mode: domain.ModeSemantic}); len(got) != 0 {
		t.Fatalf("deleted items through the other replica: %v", got)
	}
	// A capsule deleted and made again through a is empty on b.
	add("z2", "Another zebra.", nil)
	if got := uris(b, "zebra", domain.Wishlist{Mode: domain.ModeSemantic}); len(got) != 1 {
		t.Fatalf("second item: %v", got)
	}
	if err := a.DeleteCapsule(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateCapsule(ctx, "shared", ""); err != nil {
		t.Fatal(err)
	}
	if got := uris(b, "zebra", domain.Wishlist{Mode: domain.ModeSemantic}); len(got) != 0 {
		t.Fatalf("re-created capsule through the other replica: %v", got)
	}
}

// TestServicesShareDenseIndex is TestServicesShareChanges through the HNSW
// index: a capsule of 2,000 chunks of 384 dimensions (the index's width,
// and enough chunks that dense search walks the index instead of scoring
// every chunk) shared by two services. An item added through one is the
// other's best semantic match on its next query, unfiltered (the index)
// and through a metadata filter (whose few items are scored exactly);
// deleted through the first, it is gone from the other's results.
func TestServicesShareDenseIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := freshSchema(t)
	dir := t.TempDir()
	db0, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db0.Close() })
	r := rand.New(rand.NewPCG(5, 6))
	fillDense(t, db0.Capsules(), clustered(r, 384), "big", 40, 50, func(i int) map[string]any { return map[string]any{"group": float64(i % 20)} })
	replica := func() *capsule.Service {
		db, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc, err := capsule.New(capsule.Config{Store: db.Capsules(), Embedder: capsule.NewFakeEmbedder(384), DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		return svc
	}
	a, b := replica(), replica()
	const text = "The okapi is a forest giraffe of the Congo."
	top := func(w domain.Wishlist) string {
		t.Helper()
		w.Mode = domain.ModeSemantic
		hits, err := b.Query(ctx, "big", domain.Query{Text: text, Limit: 10, Wishlist: w})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Item.URI
	}
	group := domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "group", Op: domain.OpEq, Value: 7.0}}}
	if got := top(domain.Wishlist{}); got == "okapi" {
		t.Fatal("found before it was added")
	}
	it, _, err := a.AddItem(ctx, "big", capsule.NewItem{Kind: domain.ItemText, Text: text, URI: "okapi", Metadata: map[string]any{"group": 7.0}})
	if err != nil {
		t.Fatal(err)
	}
	if it, err = a.WaitItem(ctx, "big", it.ID, 30*time.Second); err != nil || it.Status != domain.StatusReady {
		t.Fatalf("%+v %v", it, err)
	}
	for _, w := range []domain.Wishlist{{}, group} {
		if got := top(w); got != "okapi" {
			t.Fatalf("filter %v: best match through the other replica %q, want okapi", w.Metadata, got)
		}
	}
	if err := a.DeleteItem(ctx, "big", it.ID); err != nil {
		t.Fatal(err)
	}
	for _, w := range []domain.Wishlist{{}, group} {
		if got := top(w); got == "okapi" {
			t.Fatalf("filter %v: deleted item found through the other replica", w.Metadata)
		}
	}
}

package postgres_test

import (
	"context"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// TestServicesShareChanges runs two capsule services, as two replicas do, on
// one database and one blob directory: an item added, updated or deleted
// through one is seen by the other's next query (its in-memory index follows
// the capsule's generation), though the other never heard of the change.
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
	it := add("z1", "The zebra crosses the savanna.", map[string]any{"lang": "en"})
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
	// A delete through a is gone from b's semantic results too (its
	// vectors live in b's memory).
	if err := a.DeleteItem(ctx, "shared", it.ID); err != nil {
		t.Fatal(err)
	}
	if got := uris(b, "zebra savanna", domain.Wishlist{Mode: domain.ModeSemantic}); len(got) != 0 {
		t.Fatalf("deleted item through the other replica: %v", got)
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

package retrieval

import (
	"context"
	"slices"
	"testing"
	"time"

	"capsuled/internal/domain"
)

func TestMatchMetadata(t *testing.T) {
	t.Parallel()
	meta := map[string]any{"year": 2021.0, "lang": "en", "draft": false, "tags": []any{"a", "b"},
		"at": "2024-05-01T10:00:00Z", "name": "beta"}
	tests := []struct {
		key  string
		op   domain.MetadataOp
		val  any
		want bool
	}{
		{"year", domain.OpEq, 2021.0, true},
		{"year", domain.OpEq, "2021", false},
		{"year", domain.OpNe, 2020.0, true},
		{"missing", domain.OpNe, 1.0, true},
		{"year", domain.OpGt, 2020.0, true},
		{"year", domain.OpGte, 2021.0, true},
		{"year", domain.OpLt, 2021.0, false},
		{"year", domain.OpLte, 2021.0, true},
		{"year", domain.OpGt, "x", false},
		{"lang", domain.OpIn, []any{"de", "en"}, true},
		{"lang", domain.OpNin, []any{"de", "en"}, false},
		{"missing", domain.OpNin, []any{"x"}, true},
		{"missing", domain.OpIn, []any{"x"}, false},
		{"draft", domain.OpEq, false, true},
		{"draft", domain.OpExists, true, true},
		{"missing", domain.OpExists, false, true},
		{"tags", domain.OpEq, "b", true},
		{"tags", domain.OpNe, "b", false},
		{"at", domain.OpGt, "2024-05-01T11:00:00+02:00", true}, // times compare as times
		{"at", domain.OpLt, "2024-05-02T00:00:00Z", true},
		{"name", domain.OpGt, "alpha", true}, // other strings lexically
		{"missing", domain.OpGt, 1.0, false},
	}
	for _, tt := range tests {
		if got := MatchMetadata(meta, domain.MetadataFilter{Key: tt.key, Op: tt.op, Value: tt.val}); got != tt.want {
			t.Errorf("%s %s %v: %v, want %v", tt.key, tt.op, tt.val, got, tt.want)
		}
	}
}

func TestCompile(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	before, after := t0.Add(time.Hour), t0.Add(-time.Hour)
	it := domain.Item{ID: "itm_1", Kind: domain.ItemFile, FileType: "text/markdown", URI: "kb://x/y", TimeAdded: t0}
	tests := []struct {
		name string
		w    domain.Wishlist
		want bool
	}{
		{"none", domain.Wishlist{}, true},
		{"kind", domain.Wishlist{Kinds: []domain.ItemKind{domain.ItemText}}, false},
		{"file type", domain.Wishlist{FileTypes: []string{"TEXT/MARKDOWN"}}, true},
		{"ids", domain.Wishlist{ItemIDs: []string{"itm_2"}}, false},
		{"prefix", domain.Wishlist{URIPrefix: "kb://x/"}, true},
		{"added window", domain.Wishlist{AddedAfter: &after, AddedBefore: &before}, true},
		{"added after is exclusive", domain.Wishlist{AddedAfter: &t0}, false},
		{"authored falls back to added", domain.Wishlist{AuthoredBefore: &before}, true},
	}
	for _, tt := range tests {
		p := Compile(tt.w)
		if got := p == nil || p(&it); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestAcceptedSetFollowsChanges: a filter's accepted set, cached per
// capsule, follows items updated, indexed and removed, and filtered
// searches answer as an engine that never cached anything.
func TestAcceptedSetFollowsChanges(t *testing.T) {
	const items, per, dim = 200, 4, 16
	src := newFakeSource(items, per, dim, 8)
	q := src.queries(1)[0]
	e := New(storedFrom(t, src), fixedEmbedder{q}, dim, Config{GraphMin: -1})
	t.Cleanup(e.Close)
	ctx := context.Background()
	w := domain.Wishlist{Mode: domain.ModeSemantic, Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}}
	ids := func() []string {
		t.Helper()
		hits, err := e.Search(ctx, "c", domain.Query{Text: "q", Limit: 500, Wishlist: w})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		var out []string
		for _, h := range hits {
			if !seen[h.Item.ID] {
				seen[h.Item.ID] = true
				out = append(out, h.Item.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := ids(); len(got) != items/10 {
		t.Fatalf("%d items pass, want %d", len(got), items/10)
	}
	// Item 5 moves into shard 3, item 13 out of it.
	ci := e.capsule("c")
	it5, it13 := ci.items[src.items[5].ID].item, ci.items[src.items[13].ID].item
	it5.Metadata = map[string]any{"shard": 3.0}
	it13.Metadata = map[string]any{"shard": 4.0}
	e.ItemUpdated(it5)
	e.ItemUpdated(it13)
	got := ids()
	if !slices.Contains(got, it5.ID) || slices.Contains(got, it13.ID) || len(got) != items/10 {
		t.Fatalf("after the updates: %v", got)
	}
	// Item 23 (shard 3) removed; a new one indexed in shard 3.
	e.ItemRemoved("c", src.items[23].ID)
	nw := domain.Item{ID: "itm_new", Capsule: "c", Kind: domain.ItemText, Metadata: map[string]any{"shard": 3.0}, ChunkCount: 1}
	e.ItemIndexed(nw, []domain.Chunk{{Idx: 0, Vector: q}})
	got = ids()
	if slices.Contains(got, src.items[23].ID) || !slices.Contains(got, "itm_new") || len(got) != items/10 {
		t.Fatalf("after the removal and the new item: %v", got)
	}
}

package retrieval

import (
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

package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"capsuled/gen"
	"capsuled/internal/domain"
)

func wishlist(t *testing.T, raw string) (domain.Wishlist, error) {
	t.Helper()
	var w gen.Wishlist
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return WishlistFromWire(&w)
}

func TestWishlistFromWire(t *testing.T) {
	t.Parallel()
	w, err := wishlist(t, `{"mode":"keyword","kinds":["file"],"file_types":["text/markdown"],"item_ids":["itm_1"],
		"uri_prefix":"kb://","added_after":"2024-01-01T00:00:00Z","authored_before":"2025-01-01T00:00:00+02:00",
		"metadata":{"lang":"en","year":{"gte":2020,"lt":2025},"draft":{"exists":false},"tag":{"in":["a","b"]},"ratio":{"gt":0.1}},
		"max_chunks_per_item":2,"min_score":0.3,"recency":{"field":"time_added","half_life_days":7,"weight":0.5}}`)
	if err != nil {
		t.Fatal(err)
	}
	if w.Mode != domain.ModeKeyword || len(w.Kinds) != 1 || w.URIPrefix != "kb://" || w.AddedAfter == nil ||
		w.AuthoredBefore.UTC().Hour() != 22 || w.MaxChunksPerItem != 2 || w.MinScore != 0.3 ||
		w.Recency.HalfLife != 7*24*time.Hour || w.Recency.Field != "time_added" || w.Recency.Weight != 0.5 || len(w.Metadata) != 6 {
		t.Fatalf("converted %+v", w)
	}
	for _, f := range w.Metadata {
		if f.Key == "ratio" && f.Value != 0.1 {
			t.Errorf("metadata number %v lost precision", f.Value)
		}
	}
	if w, err := WishlistFromWire(nil); err != nil || w.Mode != "" {
		t.Fatalf("none: %+v %v", w, err)
	}
	if w, err := wishlist(t, `{"recency":{}}`); err != nil || w.Recency.Field != "time_authored" || w.Recency.Weight != 0.3 || w.Recency.HalfLife != 30*24*time.Hour {
		t.Fatalf("recency defaults: %+v %v", w.Recency, err)
	}
	// What the spec's validation refuses before the conversion (unknown
	// keys, wrong types, bad dates) is tested through the HTTP API in
	// conformance; the conversion refuses the rest itself.
	bad := map[string]string{
		`{"mode":"fuzzy"}`:                     "wishlist.mode",
		`{"kinds":["pdf"]}`:                    "wishlist.kinds",
		`{"metadata":{"y":{"between":[1,2]}}}`: "wishlist.metadata.y.between",
		`{"metadata":{"y":{"in":1}}}`:          "wishlist.metadata.y.in",
		`{"metadata":{"y":{"in":[[1]]}}}`:      "wishlist.metadata.y.in",
		`{"metadata":{"y":{"gt":true}}}`:       "wishlist.metadata.y.gt",
		`{"metadata":{"y":{"exists":"yes"}}}`:  "wishlist.metadata.y.exists",
		`{"metadata":{"y":{}}}`:                "wishlist.metadata.y",
		`{"metadata":{"y":[1]}}`:               "wishlist.metadata.y",
		`{"metadata":{"":1}}`:                  "wishlist.metadata.",
		`{"max_chunks_per_item":0}`:            "wishlist.max_chunks_per_item",
		`{"min_score":2}`:                      "wishlist.min_score",
		`{"recency":{"weight":3}}`:             "wishlist.recency.weight",
		`{"recency":{"half_life_days":0}}`:     "wishlist.recency.half_life_days",
		`{"recency":{"field":"x"}}`:            "wishlist.recency.field",
		`{"added_after":"2024-02-01T00:00:00Z","added_before":"2024-01-01T00:00:00Z"}`:       "wishlist.added_before",
		`{"authored_after":"2024-02-01T00:00:00Z","authored_before":"2024-02-01T00:00:00Z"}`: "wishlist.authored_before",
	}
	for in, param := range bad {
		_, err := wishlist(t, in)
		e, ok := domain.AsError(err)
		if !ok || e.Kind != domain.KindInvalid || e.Param != param {
			t.Errorf("%s: %v, want a 400 naming %q", in, err, param)
		}
	}
}

func TestQueryFromWire(t *testing.T) {
	t.Parallel()
	limit := 3
	mode := gen.Semantic
	q, err := QueryFromWire(gen.QueryRequest{Query: "bees", Limit: &limit, Wishlist: &gen.Wishlist{Mode: &mode}})
	if err != nil || q.Text != "bees" || q.Limit != 3 || q.Wishlist.Mode != domain.ModeSemantic {
		t.Fatalf("%+v %v", q, err)
	}
	if q, err := QueryFromWire(gen.QueryRequest{Query: "bees"}); err != nil || q.Limit != domain.DefaultQueryLimit {
		t.Fatalf("default limit: %+v %v", q, err)
	}
}

func FuzzWishlistFromWire(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"metadata":{"a":{"in":[1,"x",true]}}}`, `{"recency":{}}`, `{"mode":"semantic"}`,
		`{"added_after":"2024-01-01T00:00:00Z"}`, `{"metadata":{"a":{"gt":1e308,"lt":"2024"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var w *gen.Wishlist
		if json.Unmarshal(raw, &w) != nil {
			return
		}
		if _, err := WishlistFromWire(w); err != nil {
			e, ok := domain.AsError(err)
			if !ok || e.Kind != domain.KindInvalid || !strings.HasPrefix(e.Param, "wishlist") {
				t.Fatalf("error %v is not a 400 naming a wishlist field", err)
			}
		}
	})
}

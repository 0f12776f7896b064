package capsule_test

import (
	"strings"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
)

func TestParseWishlist(t *testing.T) {
	t.Parallel()
	w, err := capsule.ParseWishlist([]byte(`{"mode":"keyword","kinds":["file"],"file_types":["text/markdown"],"item_ids":["itm_1"],
		"uri_prefix":"kb://","added_after":"2024-01-01T00:00:00Z","authored_before":"2025-01-01T00:00:00+02:00",
		"metadata":{"lang":"en","year":{"gte":2020,"lt":2025},"draft":{"exists":false},"tag":{"in":["a","b"]}},
		"max_chunks_per_item":2,"min_score":0.25,"recency":{"field":"time_added","half_life_days":7,"weight":0.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if w.Mode != domain.ModeKeyword || len(w.Kinds) != 1 || w.URIPrefix != "kb://" || w.AddedAfter == nil ||
		w.AuthoredBefore.UTC().Hour() != 22 || w.MaxChunksPerItem != 2 || w.MinScore != 0.25 ||
		w.Recency.HalfLife != 7*24*time.Hour || w.Recency.Field != "time_added" || len(w.Metadata) != 5 {
		t.Fatalf("parsed %+v", w)
	}
	if w, err := capsule.ParseWishlist(nil); err != nil || w.Mode != "" {
		t.Fatalf("empty: %+v %v", w, err)
	}
	bad := map[string]string{
		`{"colour":1}`:                              "wishlist.colour",
		`{"mode":"fuzzy"}`:                          "wishlist.mode",
		`{"kinds":["pdf"]}`:                         "wishlist.kinds",
		`{"added_after":"yesterday"}`:               "wishlist.added_after",
		`{"authored_after":"2024-13-01T00:00:00Z"}`: "wishlist.authored_after",
		`{"metadata":{"y":{"between":[1,2]}}}`:      "wishlist.metadata.y.between",
		`{"metadata":{"y":{"in":1}}}`:               "wishlist.metadata.y.in",
		`{"metadata":{"y":{"gt":true}}}`:            "wishlist.metadata.y.gt",
		`{"metadata":{"y":{"exists":"yes"}}}`:       "wishlist.metadata.y.exists",
		`{"metadata":{"y":{}}}`:                     "wishlist.metadata.y",
		`{"metadata":{"y":[1]}}`:                    "wishlist.metadata.y",
		`{"metadata":[]}`:                           "wishlist.metadata",
		`{"max_chunks_per_item":1.5}`:               "wishlist.max_chunks_per_item",
		`{"min_score":2}`:                           "wishlist.min_score",
		`{"recency":{"weight":3}}`:                  "wishlist.recency.weight",
		`{"recency":{"field":"x"}}`:                 "wishlist.recency.field",
		`{"recency":{"halflife":3}}`:                "wishlist.recency",
		`[]`:                                        "wishlist",
		`{"uri_prefix":5}`:                          "wishlist.uri_prefix",
		`{"added_after":"2024-02-01T00:00:00Z","added_before":"2024-01-01T00:00:00Z"}`: "wishlist.added_before",
	}
	for in, param := range bad {
		_, err := capsule.ParseWishlist([]byte(in))
		e, ok := domain.AsError(err)
		if !ok || e.Kind != domain.KindInvalid || e.Param != param {
			t.Errorf("%s: %v (param %q), want param %q", in, err, paramOf(e), param)
		}
	}
}

func paramOf(e *domain.Error) string {
	if e == nil {
		return ""
	}
	return e.Param
}

func FuzzParseWishlist(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"metadata":{"a":{"in":[1,"x",true]}}}`, `{"recency":{}}`, `{"mode":"semantic"}`, `{"added_after":"2024-01-01T00:00:00Z"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := capsule.ParseWishlist(raw)
		if err != nil {
			e, ok := domain.AsError(err)
			if !ok || e.Kind != domain.KindInvalid || !strings.HasPrefix(e.Param, "wishlist") {
				t.Fatalf("error %v is not a 400 naming a wishlist field", err)
			}
		}
	})
}

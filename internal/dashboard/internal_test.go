package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
)

func TestSessionCookieRoundTripAndTampering(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	c := claims{KeyID: "key_1", SessionID: "sid", Expires: time.Now().Add(time.Hour).Unix()}
	v, err := encodeSession(key, c)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := decodeSession(key, v); !ok || got != c {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	body, sig, _ := strings.Cut(v, ".")
	other := func(s string) string { // s with its first character changed
		if s[0] == 'A' {
			return "B" + s[1:]
		}
		return "A" + s[1:]
	}
	for name, bad := range map[string]string{
		// The signature with other unused low bits in its last character:
		// the same bytes to a lenient decoder, refused by the strict one.
		"non-canonical sig": body + "." + sig[:len(sig)-1] + string(base64URL[strings.IndexByte(base64URL, sig[len(sig)-1])^1]),
		"other key":         "",
		"no signature":      body,
		"flipped body":      other(body) + "." + sig,
		"flipped sig":       body + "." + other(sig),
		"empty":             "",
		"too long":          strings.Repeat("a", maxCookie+1),
		"junk":              "....",
		"unsigned json":     "eyJrIjoia2V5XzEiLCJzIjoic2lkIiwiZSI6OTk5OTk5OTk5OX0.",
	} {
		k := key
		if name == "other key" {
			k, bad = []byte("another key, 32 bytes long......"), v
		}
		if _, ok := decodeSession(k, bad); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func FuzzDecodeSession(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	v, _ := encodeSession(key, claims{KeyID: "key_1", SessionID: "sid", Expires: 1})
	f.Add(v)
	f.Add("")
	f.Add(".")
	f.Add("e30.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := decodeSession(key, s)
		if ok && (c.KeyID == "" || c.SessionID == "") {
			t.Fatalf("accepted empty claims from %q", s)
		}
		if ok {
			// Only values this key signed are accepted: re-signing gives the same claims.
			again, _ := encodeSession(key, c)
			if c2, ok2 := decodeSession(key, again); !ok2 || c2 != c {
				t.Fatalf("claims do not round-trip: %+v", c)
			}
		}
	})
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                          "/dashboard/",
		"/dashboard/keys":           "/dashboard/keys",
		"/dashboard/playground?q=1": "/dashboard/playground?q=1",
		"//evil.example":            "/dashboard/",
		"https://evil.example/":     "/dashboard/",
		"/dashboardx":               "/dashboard/",
		"/v1/keys":                  "/dashboard/",
		"/dashboard/\\evil":         "/dashboard/",
		"/dashboard/\r\nSet-Cookie": "/dashboard/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBuildQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		form  playgroundForm
		param string // the field blamed, "" for success
		check func(t *testing.T, q domain.Query, wire string)
	}{
		{"plain", playgroundForm{Query: " zebra "}, "", func(t *testing.T, q domain.Query, wire string) {
			if q.Text != "zebra" || q.Limit != domain.DefaultQueryLimit || wire != `{"query":"zebra"}` {
				t.Errorf("%+v %s", q, wire)
			}
		}},
		{"hybrid is the default and stays out of the wire", playgroundForm{Query: "a", Mode: "hybrid", Limit: "3"}, "", func(t *testing.T, q domain.Query, wire string) {
			if wire != `{"limit":3,"query":"a"}` {
				t.Errorf("%s", wire)
			}
		}},
		{"wishlist", playgroundForm{Query: "a", Mode: "semantic", Kinds: []string{"file"}, FileTypes: "text/plain, application/pdf",
			URIPrefix: "s3://b/", AddedAfter: "2026-01-02", MaxChunksPerItem: "2", MinScore: "0.5", Metadata: "lang=en\n\nyear = 2024"}, "",
			func(t *testing.T, q domain.Query, wire string) {
				w := q.Wishlist
				if w.Mode != domain.ModeSemantic || len(w.Kinds) != 1 || len(w.FileTypes) != 2 || w.URIPrefix != "s3://b/" ||
					w.AddedAfter == nil || w.AddedAfter.Day() != 2 || w.MaxChunksPerItem != 2 || w.MinScore != 0.5 || len(w.Metadata) != 2 {
					t.Errorf("%+v", w)
				}
				want := `{"query":"a","wishlist":{"added_after":"2026-01-02T00:00:00Z","file_types":["text/plain","application/pdf"],"kinds":["file"],"max_chunks_per_item":2,"metadata":{"lang":"en","year":"2024"},"min_score":0.5,"mode":"semantic","uri_prefix":"s3://b/"}}`
				if wire != want {
					t.Errorf("wire\n got %s\nwant %s", wire, want)
				}
			}},
		{"empty query", playgroundForm{}, "query", nil},
		{"long query", playgroundForm{Query: strings.Repeat("a", domain.MaxQueryBytes+1)}, "query", nil},
		{"limit zero", playgroundForm{Query: "a", Limit: "0"}, "limit", nil},
		{"limit text", playgroundForm{Query: "a", Limit: "ten"}, "limit", nil},
		{"mode", playgroundForm{Query: "a", Mode: "fuzzy"}, "mode", nil},
		{"kind", playgroundForm{Query: "a", Kinds: []string{"image"}}, "kinds", nil},
		{"date", playgroundForm{Query: "a", AddedBefore: "soon"}, "added_before", nil},
		{"max chunks", playgroundForm{Query: "a", MaxChunksPerItem: "101"}, "max_chunks_per_item", nil},
		{"min score", playgroundForm{Query: "a", MinScore: "1.5"}, "min_score", nil},
		{"metadata", playgroundForm{Query: "a", Metadata: "no equals sign"}, "metadata", nil},
		{"date range (the API's rule)", playgroundForm{Query: "a", AddedAfter: "2026-01-02", AddedBefore: "2026-01-01"}, "added_before", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, wq, err := buildQuery(tc.form)
			if tc.param != "" {
				e, ok := domain.AsError(err)
				if !ok || e.Kind != domain.KindInvalid || e.Param != tc.param {
					t.Fatalf("error %v, want invalid %s", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, q, mustJSON(t, wq))
		})
	}
}

func FuzzBuildQuery(f *testing.F) {
	f.Add("zebra", "10", "keyword", "text/plain", "2026-01-01", "0.5", "a=b")
	f.Add("", "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, query, limit, mode, types, after, minScore, meta string) {
		q, wq, err := buildQuery(playgroundForm{Query: query, Limit: limit, Mode: mode, FileTypes: types, AddedAfter: after, MinScore: minScore, Metadata: meta})
		if err != nil {
			if _, ok := domain.AsError(err); !ok {
				t.Fatalf("not a client error: %v", err)
			}
			return
		}
		if q.Text == "" || q.Limit < 1 || q.Limit > domain.MaxQueryLimit || q.Wishlist.MinScore < 0 || q.Wishlist.MinScore > 1 {
			t.Fatalf("accepted an impossible query: %+v", q)
		}
		_ = mustJSON(t, wq)
	})
}

func TestHumanBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 64 << 20: "64.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBreakableNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"holidays.md":                   "holidays.<wbr>md",
		"a<b>.md":                       "a&lt;b&gt;.<wbr>md",
		"docs/q3_plan-v2.md":            "docs/<wbr>q3_<wbr>plan-<wbr>v2.<wbr>md",
		"":                              "",
		strings.Repeat("x", 50) + ".md": strings.Repeat("x", 24) + "<wbr>" + strings.Repeat("x", 24) + "<wbr>xx.<wbr>md",
	} {
		if got := string(breakable(in)); got != want {
			t.Errorf("breakable(%q) = %q, want %q", in, got, want)
		}
	}
}

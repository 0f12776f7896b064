package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// fuzzRoutes are the JSON operations whose request bodies come from outside:
// the fuzzer picks one by its first byte and sends the rest as the body.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/chat/completions"},
	{"POST", "/v1/memory/chat/completions?namespace=fuzz"},
	{"POST", "/capsules/fuzz/query"},
	{"POST", "/v1/keys"},
	{"POST", "/v1/tokens"},
	{"POST", "/v1/capsules"},
	{"POST", "/v1/memory/namespaces/fuzz/memories"},
}

// fuzzContentTypes are the Content-Types the fuzzer picks from by its
// second byte: JSON, its variants, and the ones that used to skip the gate.
var fuzzContentTypes = []string{
	"application/json", "application/json; charset=utf-8", "multipart/form-data; boundary=x",
	"multipart/form-data", "text/plain", "application/x-www-form-urlencoded", "", "application/x-ndjson",
	"application/json; charset=\"", "Application/JSON",
}

// FuzzRequestBody sends arbitrary bodies of arbitrary Content-Types through
// the gate (routing, the media type, depth and value checks, the spec's
// validation and the validation error refiner) to the operations that take
// JSON. Whatever the body, the answer is never a 500 and every error is the
// spec's JSON error body whose param is null or names something; a body
// nested deeper than MaxJSONDepth is never accepted, a multipart body never
// reaches a JSON operation, and no error is longer than the caps.
func FuzzRequestBody(f *testing.F) {
	seeds := []string{
		`{"model":"svc-1","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"svc-1","messages":[{"role":"tool","content":[{"type":"text"}]}]}`,
		`{"model":"svc-1","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":1}}]}]}`,
		`{"model":"svc-1","messages":[{"role":"custom","content":[{"type":"thinking","closed":"x"}]}],"tools":[{"function":{"name":"d","parameters":{}}}]}`,
		`{"model":"svc-1","messages":[],"response_format":{"type":"json_schema","json_schema":{}}}`,
		`{"query":"x","limit":-1,"wishlist":{"a":[1,{"b":null}]}}`,
		`{"name":"k","scopes":["nope"],"capsules":[""]}`,
		`{"namespaces":[1],"ttl_seconds":"x"}`,
		`{"name":"Bad Name!"}`,
		`{"content":""}`,
		`{`, `[]`, `null`, `"x"`, `{"a":1e999}`, "\x00\xff",
	}
	seeds = append(seeds,
		`{"query":"x","wishlist":{"metadata":{"a":`+strings.Repeat(`{"eq":`, 70)+`1`+strings.Repeat(`}`, 70)+`}}}`,
		`{"model":"svc-1","messages":[{"role":"user","content":`+strings.Repeat(`[`, 65)+strings.Repeat(`]`, 65)+`}]}`,
		`{"name":"`+strings.Repeat(`[{\"`, 100)+`","scopes":["chat"]}`,
		"--x\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nk\r\n--x--\r\n",
	)
	for i, s := range seeds {
		f.Add(byte(i), byte(i), s)
	}
	spec, err := LoadSpec(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	srv, err := NewServer(Config{}, spec, Deps{Auth: fakeAuth{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, route, ctype byte, body string) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		ct := fuzzContentTypes[int(ctype)%len(fuzzContentTypes)]
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("Authorization", "Bearer fuzzer")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		deep, _ := jsonShape([]byte(body), shapeLimits{MaxJSONDepth, 1 << 30, 1 << 30})
		mt, _, err := mime.ParseMediaType(ct)
		if w.Code < 400 && body != "" && (deep || err != nil || mt != "application/json") {
			t.Fatalf("%s %s (%q) %q: status %d for a body the gate must refuse", r.method, r.path, ct, body, w.Code)
		}
		if len(w.Body.Bytes()) > 2048 && w.Code >= 400 {
			t.Fatalf("%s %s: an error body of %d bytes", r.method, r.path, w.Body.Len())
		}
		if w.Code >= 500 && w.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s (%q) %q: status %d: %s", r.method, r.path, ct, body, w.Code, w.Body)
		}
		if w.Code < 400 {
			return
		}
		var e errorBody
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
			t.Fatalf("%s %s %q: status %d with a body that is not an error: %s", r.method, r.path, body, w.Code, w.Body)
		}
		if p := e.Error.Param; p != nil && *p == "" {
			t.Fatalf("%s %s %q: empty param (want null)", r.method, r.path, body)
		}
	})
}

// wellFormedParam reports whether p looks like messages[2].content: no empty
// segments and balanced numeric indexes.
func wellFormedParam(p string) bool {
	if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
		return false
	}
	for rest := p; ; {
		i := strings.IndexByte(rest, '[')
		if i < 0 {
			return !strings.Contains(rest, "]")
		}
		j := strings.IndexByte(rest[i:], ']')
		if j < 0 {
			return false
		}
		if _, err := strconv.Atoi(rest[i+1 : i+j]); err != nil {
			return false
		}
		rest = rest[i+j+1:]
	}
}

// FuzzPointerToParam checks the JSON pointer → param rendering: a pointer of
// field names and indexes renders as a well-formed param that reads back as
// the same segments.
func FuzzPointerToParam(f *testing.F) {
	f.Add("messages", "2", "content")
	f.Add("tools", "0", "function")
	f.Add("a", "b", "-1")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ptr := []string{a, b, c}
		for _, seg := range ptr {
			if seg == "" || strings.ContainsAny(seg, ".[]") {
				return // not a field name the spec can have
			}
		}
		if _, err := strconv.Atoi(a); err == nil {
			return // a body's pointer starts with a field
		}
		got := pointerToParam(ptr)
		if !wellFormedParam(got) {
			t.Fatalf("pointerToParam(%q) = %q is malformed", ptr, got)
		}
		if back := paramSegments(got); strings.Join(back, "/") != strings.Join(ptr, "/") {
			t.Fatalf("pointerToParam(%q) = %q reads back as %q", ptr, got, back)
		}
	})
}

// paramSegments splits messages[2].content into messages, 2, content.
func paramSegments(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		name, idx, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, name)
		}
		for idx != "" {
			n, rest, _ := strings.Cut(idx, "]")
			out = append(out, n)
			idx = strings.TrimPrefix(rest, "[")
		}
	}
	return out
}

func TestWellFormedParam(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"messages[2].content", true},
		{"tools", true},
		{"a[0][1].b", true},
		{"", false},
		{".a", false},
		{"a..b", false},
		{"a[x]", false},
		{"a[1", false},
		{"a]", false},
	} {
		if got := wellFormedParam(tc.p); got != tc.want {
			t.Errorf("wellFormedParam(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

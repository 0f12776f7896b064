package conformance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// The regression tests of the second security review (issue 15), one per
// attack, each through the running server.

// deepJSON nests n objects under "eq" around a scalar.
func deepJSON(n int) string {
	return strings.Repeat(`{"eq":`, n) + `1` + strings.Repeat(`}`, n)
}

// Attack 1: deeply nested JSON used to cost seconds and gigabytes of
// validation. Bodies nested beyond 64 are refused before parsing, whatever
// the operation and however the nesting is spelled; nesting inside strings
// does not count. (api.BenchmarkHostileBodies and
// api.TestHostileBodiesAllocateLittle measure the cost of the worst bodies.)
func TestAttackDeeplyNestedJSON(t *testing.T) {
	t.Parallel()
	createCapsule(t, "deepjson")
	chat := func(content string) string {
		return `{"model":"svc-1","messages":[{"role":"user","content":` + content + `}]}`
	}
	for _, tc := range []struct{ name, path, body string }{
		{"capsule query wishlist 9,990 deep", "/capsules/deepjson/query", `{"query":"x","wishlist":{"metadata":{"a":` + deepJSON(9990) + `}}}`},
		{"capsule query 65 deep", "/capsules/deepjson/query", `{"query":"x","wishlist":{"metadata":{"a":` + deepJSON(62) + `}}}`},
		{"chat message 3,000 deep", "/v1/chat/completions", chat(strings.Repeat("[", 3000) + strings.Repeat("]", 3000))},
		{"memory chat 3,000 deep", "/v1/memory/chat/completions?namespace=deep", chat(strings.Repeat("[", 3000) + strings.Repeat("]", 3000))},
		{"item metadata 100 deep", "/v1/capsules/deepjson/items", `{"content":"x","metadata":{"a":` + deepJSON(100) + `}}`},
		{"key request 70 deep arrays", "/v1/keys", `{"name":"x","scopes":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`},
		{"unterminated 200 deep", "/v1/tokens", strings.Repeat("[", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := expect(t, do(t, req{method: "POST", path: tc.path, cred: srv.admin, body: tc.body}), http.StatusBadRequest)
			if e := resp.Err(t); *e.Error.Code != "nesting_too_deep" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "64") {
				t.Fatalf("error %+v", e.Error)
			}
		})
	}
	// 64 deep is allowed (and then validated as usual); brackets and braces
	// inside strings, escaped quotes included, do not count.
	ok := `{"content":"` + strings.Repeat(`[{\"`, 5000) + `","metadata":{"a":` + deepJSON(60) + `}}`
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/deepjson/items", cred: srv.admin, body: ok}), http.StatusCreated)
	resp := expect(t, do(t, req{method: "POST", path: "/capsules/deepjson/query", cred: srv.admin,
		body: `{"query":"x","wishlist":{"metadata":{"a":` + deepJSON(60) + `}}}`}), http.StatusBadRequest)
	if e := resp.Err(t); *e.Error.Code != "invalid_value" {
		t.Fatalf("64 deep: %+v", e.Error)
	}
}

// Attack 1, continued: a validation error never echoes a large body. The
// message and param are capped whatever the field name and value.
func TestAttackHugeValidationError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 200000)
	resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: srv.admin,
		body: map[string]any{"name": "x", "scopes": []string{"chat"}, long: strings.Repeat("v", 200000)}}), http.StatusBadRequest)
	e := resp.Err(t)
	if len(resp.Body) > 2048 || len(e.Error.Message) > 520 || e.Error.Param == nil || len(*e.Error.Param) > 260 {
		t.Fatalf("an error of %d bytes (message %d): %.200s", len(resp.Body), len(e.Error.Message), resp.Body)
	}
}

// Attack 1, continued: a body of very many small values is refused before
// it is decoded for validation (decoding costs tens of bytes per value).
func TestAttackManySmallValues(t *testing.T) {
	t.Parallel()
	body := `{"model":"svc-1","messages":[{"role":"user","content":"x"}],"allowed_token_ids":[` + strings.Repeat("1,", 140000) + `1]}`
	resp := expect(t, do(t, req{method: "POST", path: "/v1/chat/completions", cred: srv.admin, body: body}), http.StatusRequestEntityTooLarge)
	if e := resp.Err(t); *e.Error.Code != "too_many_values" {
		t.Fatalf("error %+v", e.Error)
	}
}

// multipartBody is a multipart form with one JSON field, as the probe sent.
func multipartBody(t *testing.T, field string, value []byte) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormField(field)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(value)
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// Attack 2: a multipart Content-Type used to skip the body limit and the
// schema on every route. Only adding an item takes multipart; every other
// operation with a body answers 415 before reading it.
func TestAttackMultipartSkipsTheGate(t *testing.T) {
	t.Parallel()
	createCapsule(t, "mpgate")
	many := make([]any, 50000)
	for i := range many {
		many[i] = map[string]any{"role": "user", "content": "x"}
	}
	manyJSON, _ := json.Marshal(map[string]any{"model": "svc-1", "messages": many})
	for _, tc := range []struct {
		name, path string
		body       []byte
	}{
		{"chat with 50,000 messages", "/v1/chat/completions", manyJSON},
		{"key with unknown fields", "/v1/keys", []byte(`{"name":"x","scopes":["admin"],"colour":"red"}`)},
		{"memory chat", "/v1/memory/chat/completions?namespace=mp", manyJSON},
		{"capsule query", "/capsules/mpgate/query", []byte(`{"query":"x"}`)},
		{"access token", "/v1/tokens", []byte(`{}`)},
		{"create capsule", "/v1/capsules", []byte(`{"name":"viamultipart"}`)},
		{"memory import", "/v1/memory/namespaces/mp/import", []byte(`{"content":"x"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := multipartBody(t, "body", tc.body)
			resp := expect(t, do(t, req{method: "POST", path: tc.path, cred: srv.admin, body: body, header: map[string]string{"Content-Type": ct}}), http.StatusUnsupportedMediaType)
			if e := resp.Err(t); *e.Error.Code != "unsupported_media_type" || e.Error.Type != "unsupported_media_type_error" {
				t.Fatalf("error %+v", e.Error)
			}
		})
	}
	// Other wrong types get the same answer; a missing one too.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/xml", "", "multipart/mixed; boundary=x", "application/json; charset=utf-8; x=\"", "application/jsonx"} {
		resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: srv.admin, body: `{"name":"x","scopes":["chat"]}`, header: map[string]string{"Content-Type": ct}}), http.StatusUnsupportedMediaType)
		if e := resp.Err(t); !strings.Contains(e.Error.Message, "application/json") {
			t.Fatalf("%q: %+v", ct, e.Error)
		}
	}
	// application/json with parameters is still JSON.
	expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: srv.admin, body: `{"name":"cs","scopes":["chat"]}`, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}}), http.StatusCreated)
}

// countingReader is a body of a prefix and then x up to left bytes, which
// counts the bytes the server pulled from it.
type countingReader struct {
	prefix string
	left   int64
	read   atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if c.prefix != "" {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		c.left -= int64(n)
		c.read.Add(int64(n))
		return n, nil
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	for i := range p {
		p[i] = 'x'
	}
	c.left -= int64(len(p))
	c.read.Add(int64(len(p)))
	return len(p), nil
}

// Attack 2, continued: a 100 MB body is refused after the size limit
// whatever its Content-Type, not read whole: 1 MiB for JSON here, 64 MiB for
// an upload. (Sent around the recorder, which would buffer it.)
func TestAttackHugeBodyIsNotReadWhole(t *testing.T) {
	t.Parallel()
	createCapsule(t, "hugebody")
	filePart := "--xxxx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.txt\"\r\n\r\n"
	for _, tc := range []struct {
		name, path, ct, prefix string
		status                 int
		maxRead                int64
	}{
		{"JSON", "/v1/keys", "application/json", "", http.StatusRequestEntityTooLarge, 16 << 20},
		{"multipart to a JSON route", "/v1/chat/completions", "multipart/form-data; boundary=xxxx", filePart, http.StatusUnsupportedMediaType, 16 << 20},
		{"multipart upload", "/v1/capsules/hugebody/items", "multipart/form-data; boundary=xxxx", filePart, http.StatusRequestEntityTooLarge, 80 << 20},
		{"chunked JSON", "/capsules/hugebody/query", "application/json", "", http.StatusRequestEntityTooLarge, 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 100 << 20
			body := &countingReader{prefix: tc.prefix, left: size}
			r, err := http.NewRequest("POST", srv.url+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(tc.name, "chunked") {
				r.ContentLength = size
			}
			r.Header.Set("Content-Type", tc.ct)
			r.Header.Set("Authorization", "Bearer "+srv.admin)
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatalf("the server broke the connection instead of answering: %v", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if n := body.read.Load(); n > tc.maxRead {
				t.Fatalf("the server read %d MiB of the body", n>>20)
			}
		})
	}
}

// Attack 2, continued: the upload route's multipart body is capped as a
// whole, not only its file part: many large fields are refused.
func TestAttackMultipartFieldsAreCapped(t *testing.T) {
	t.Parallel()
	createCapsule(t, "mpfields")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i < 40; i++ {
		w, _ := mw.CreateFormField(fmt.Sprintf("f%d", i))
		w.Write(bytes.Repeat([]byte("x"), 60<<10))
	}
	mw.Close()
	resp := expect(t, do(t, req{method: "POST", path: "/v1/capsules/mpfields/items", cred: srv.admin, body: buf.Bytes(),
		header: map[string]string{"Content-Type": mw.FormDataContentType()}}), http.StatusBadRequest)
	if e := resp.Err(t); e.Error.Param == nil {
		t.Fatalf("error %+v", e.Error)
	}
}

// Attack 3: an admin key limited to capsule a and namespace n1 used to
// create an unrestricted admin key and revoke the first-start admin key. A
// key now creates, sees and revokes only keys within its own access.
func TestAttackRestrictedAdminMintsWiderKeys(t *testing.T) {
	t.Parallel()
	_, limited := newKey(t, map[string]any{"scopes": []string{"admin"}, "capsules": []string{"sec-a"}, "namespaces": []string{"sec-n1"}})
	var admins struct {
		Data []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"data"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/keys", cred: srv.admin}), http.StatusOK).JSON(t, &admins)
	rootID := ""
	for _, k := range admins.Data {
		if strings.Contains(k.Name, "first start") {
			rootID = k.ID
		}
	}
	if rootID == "" {
		t.Fatal("no first-start key in the list")
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"unrestricted admin", map[string]any{"name": "wide", "scopes": []string{"admin"}}, "capsules"},
		{"other capsule", map[string]any{"name": "wide", "scopes": []string{"chat"}, "capsules": []string{"sec-b"}, "namespaces": []string{"sec-n1"}}, "capsules[0]"},
		{"all namespaces", map[string]any{"name": "wide", "scopes": []string{"memory"}, "capsules": []string{"sec-a"}}, "namespaces"},
		{"other namespace", map[string]any{"name": "wide", "scopes": []string{"memory"}, "capsules": []string{"sec-a"}, "namespaces": []string{"sec-n1", "sec-n2"}}, "namespaces[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: limited, body: tc.body}), http.StatusForbidden)
			e := resp.Err(t)
			if *e.Error.Code != "key_not_allowed" || e.Error.Param == nil || *e.Error.Param != tc.param {
				t.Fatalf("error %+v", e.Error)
			}
		})
	}
	// Within its access: created, listed, readable, revocable.
	resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: limited, body: map[string]any{"name": "narrow", "scopes": []string{"capsules:read"}, "capsules": []string{"sec-a"}, "namespaces": []string{"sec-n1"}}}), http.StatusCreated)
	var created struct {
		Key struct {
			ID string `json:"id"`
		} `json:"key"`
	}
	resp.JSON(t, &created)
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/keys", cred: limited}), http.StatusOK).JSON(t, &list)
	seen := map[string]bool{}
	for _, k := range list.Data {
		seen[k.ID] = true
	}
	if !seen[created.Key.ID] || seen[rootID] {
		t.Fatalf("the limited key lists %v (want its own narrow key, not the first-start key)", seen)
	}
	// The first-start admin key is beyond it: not readable, not revocable.
	for _, r := range []req{{method: "GET", path: "/v1/keys/" + rootID}, {method: "DELETE", path: "/v1/keys/" + rootID}} {
		r.cred = limited
		if e := expect(t, do(t, r), http.StatusForbidden).Err(t); *e.Error.Code != "key_not_allowed" {
			t.Fatalf("%s: %+v", r.method, e.Error)
		}
	}
	expect(t, do(t, req{method: "GET", path: "/v1/keys", cred: srv.admin}), http.StatusOK)
	expect(t, do(t, req{method: "DELETE", path: "/v1/keys/" + created.Key.ID, cred: limited}), http.StatusOK)
}

// Attack 8: an access token whose signature was re-encoded with other unused
// low bits (the same bytes to a lenient base64 decoder) used to be accepted:
// signatures are now decoded strictly. And every API response says
// X-Content-Type-Options: nosniff.
func TestAttackNonCanonicalTokenSignature(t *testing.T) {
	t.Parallel()
	_, key := newKey(t, map[string]any{"scopes": []string{"memory"}})
	var tok struct {
		Token string `json:"token"`
	}
	resp := expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: key, body: map[string]any{}}), http.StatusCreated)
	resp.JSON(t, &tok)
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", resp.Header.Get("X-Content-Type-Options"))
	}
	expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces", cred: tok.Token}), http.StatusOK)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := tok.Token[len(tok.Token)-1]
	forged := tok.Token[:len(tok.Token)-1] + string(alphabet[strings.IndexByte(alphabet, last)^1])
	if e := expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces", cred: forged}), http.StatusUnauthorized).Err(t); e.Error.Type != "authentication_error" {
		t.Fatalf("error %+v", e.Error)
	}
	for _, r := range []req{{method: "GET", path: "/healthz"}, {method: "GET", path: "/v2/nothing"}, {method: "GET", path: "/v1/keys", cred: srv.admin}} {
		if got := do(t, r).Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q", r.method, r.path, got)
		}
	}
}

// Attack 7: a 4 MB memory chat of 1,024 messages took 127 s of CPU. The
// tokens of one message and of one request are bounded (BERT pre-tokens:
// "x." is two) before any other work: 413 with the limit in the message,
// streamed or not, on svc-1 and the memory operation; on the memory
// operation so are the tokens of the turns its namespace does not hold yet
// (those it embeds), so a resent conversation pays only for its new turns.
func TestAttackTooManyTokens(t *testing.T) {
	t.Parallel()
	tokens := func(n int) string { return strings.Repeat("x.", n/2) } // n tokens in n bytes
	msgs := func(sizes ...int) []map[string]any {
		var out []map[string]any
		for i, n := range sizes {
			role := []string{"user", "assistant"}[i%2]
			// Each message its own text (one more token): equal turns of one
			// conversation are remembered once.
			out = append(out, map[string]any{"role": role, "content": fmt.Sprintf("m%d ", i) + tokens(n)})
		}
		return out
	}
	for _, tc := range []struct {
		name, path string
		messages   []map[string]any
		stream     bool
		code       string
		param      string
	}{
		{"svc-1: one message over 32,768", "/v1/chat/completions", msgs(32770), false, "message_too_long", "messages[0]"},
		{"svc-1: a later message over 32,768, streamed", "/v1/chat/completions", msgs(10, 20, 32770), true, "message_too_long", "messages[2]"},
		{"svc-1: 131,072 in all", "/v1/chat/completions", msgs(32000, 32000, 32000, 32000, 32000), false, "too_many_tokens", "messages"},
		{"memory: one message over 32,768", "/v1/memory/chat/completions?namespace=tokens", msgs(32770), false, "message_too_long", "messages[0]"},
		{"memory: 32,768 in new turns", "/v1/memory/chat/completions?namespace=tokens", msgs(12000, 12000, 12000), true, "too_many_tokens", "messages"},
		{"memory: 131,072 in all", "/v1/memory/chat/completions?namespace=tokens", msgs(32000, 32000, 32000, 32000, 32000), false, "too_many_tokens", "messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := expect(t, do(t, req{method: "POST", path: tc.path, cred: srv.admin,
				body: map[string]any{"model": "svc-1", "messages": tc.messages, "stream": tc.stream}}), http.StatusRequestEntityTooLarge)
			e := resp.Err(t)
			if *e.Error.Code != tc.code || e.Error.Type != "request_too_large" || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, "limit") {
				t.Fatalf("error %+v", e.Error)
			}
		})
	}
	// Under the bounds: answered.
	expect(t, do(t, req{method: "POST", path: "/v1/chat/completions", cred: srv.admin,
		body: map[string]any{"model": "svc-1", "messages": msgs(32000, 32000, 32000, 32000, 2000)}}), http.StatusOK)
	expect(t, do(t, req{method: "POST", path: "/v1/memory/chat/completions?namespace=tokens", cred: srv.admin,
		body: map[string]any{"model": "svc-1", "messages": msgs(12000, 12000, 8000)}}), http.StatusOK)
	// The same conversation resent with two new turns: 37,010 tokens in all,
	// but only 5,010 not yet remembered.
	expect(t, do(t, req{method: "POST", path: "/v1/memory/chat/completions?namespace=tokens", cred: srv.admin,
		body: map[string]any{"model": "svc-1", "messages": msgs(12000, 12000, 8000, 10, 5000)}}), http.StatusOK)
	// In another namespace none of it is remembered.
	resp := expect(t, do(t, req{method: "POST", path: "/v1/memory/chat/completions?namespace=tokens-other", cred: srv.admin,
		body: map[string]any{"model": "svc-1", "messages": msgs(12000, 12000, 8000, 10, 5000)}}), http.StatusRequestEntityTooLarge)
	if e := resp.Err(t); *e.Error.Code != "too_many_tokens" || !strings.Contains(e.Error.Message, "not yet remembered") {
		t.Fatalf("error %+v", e.Error)
	}
}

// Attack 7, continued: a 1.9 MB CSV of 200,000 columns was still indexing
// after 7 minutes (each record is one row block naming every column:
// thousands of chunks to embed). A record of more than 4,096 columns fails the
// item at once with the reason; a wide but bounded one is indexed.
func TestAttackWideCSV(t *testing.T) {
	t.Parallel()
	createCapsule(t, "widecsv")
	csv := func(cols int) []byte {
		var b bytes.Buffer
		for r := range 3 {
			for c := range cols {
				if c > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%c%d", 'a'+r, c)
			}
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	resp := expect(t, upload(t, "widecsv", "wide.csv", "text/csv", csv(200000), nil), http.StatusCreated)
	var it wireItem
	resp.JSON(t, &it)
	if it.Status != "failed" || it.Error == nil || !strings.Contains(*it.Error, "200000 columns, more than the limit of 4096") {
		t.Fatalf("200,000 columns: %+v (error %v)", it, it.Error)
	}
	resp = expect(t, upload(t, "widecsv", "ok.csv", "text/csv", csv(300), nil), http.StatusCreated)
	resp.JSON(t, &it)
	if it.Status != "ready" || it.ChunkCount == 0 {
		t.Fatalf("300 columns: %+v", it)
	}
}

package conformance_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// The conformance server runs with the embedder off (no model configured),
// so hybrid queries are keyword-only and semantic ones answer 422.

type wireItem struct {
	ID           string         `json:"id"`
	Capsule      string         `json:"capsule"`
	Kind         string         `json:"kind"`
	URI          string         `json:"uri"`
	FileName     string         `json:"file_name"`
	FileType     string         `json:"file_type"`
	Status       string         `json:"status"`
	Error        *string        `json:"error"`
	ChunkCount   int            `json:"chunk_count"`
	ContentHash  string         `json:"content_hash"`
	Metadata     map[string]any `json:"metadata"`
	TimeAuthored *string        `json:"time_authored"`
}

type wireHit struct {
	ItemID   string         `json:"item_id"`
	Idx      int            `json:"idx"`
	Content  string         `json:"content"`
	URI      string         `json:"uri"`
	Kind     string         `json:"kind"`
	Score    float64        `json:"score"`
	Metadata map[string]any `json:"metadata"`
}

func createCapsule(t *testing.T, name string) {
	t.Helper()
	expect(t, do(t, req{method: "POST", path: "/v1/capsules", cred: srv.admin, body: map[string]any{"name": name, "description": "test " + name}}), http.StatusCreated)
}

func addText(t *testing.T, capsule string, body map[string]any, status int) wireItem {
	t.Helper()
	resp := expect(t, do(t, req{method: "POST", path: "/v1/capsules/" + capsule + "/items?wait=true", cred: srv.admin, body: body}), status)
	var it wireItem
	resp.JSON(t, &it)
	return it
}

// upload sends a multipart item.
func upload(t *testing.T, capsule, fileName, partType string, content []byte, fields map[string]string) response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, fileName))
	if partType != "" {
		h.Set("Content-Type", partType)
	}
	w, _ := mw.CreatePart(h)
	w.Write(content)
	mw.Close()
	return do(t, req{method: "POST", path: "/v1/capsules/" + capsule + "/items?wait=true&wait_timeout_seconds=30", cred: srv.admin,
		body: buf.Bytes(), header: map[string]string{"Content-Type": mw.FormDataContentType()}})
}

func query(t *testing.T, capsule string, body any, status int) []wireHit {
	t.Helper()
	resp := expect(t, do(t, req{method: "POST", path: "/capsules/" + capsule + "/query", cred: srv.admin, body: body}), status)
	var hits []wireHit
	if status == http.StatusOK {
		resp.JSON(t, &hits)
	}
	return hits
}

func TestCapsuleLifecycle(t *testing.T) {
	t.Parallel()
	createCapsule(t, "life")
	if e := expect(t, do(t, req{method: "POST", path: "/v1/capsules", cred: srv.admin, body: map[string]any{"name": "life"}}), http.StatusConflict).Err(t); *e.Error.Code != "capsule_exists" {
		t.Fatalf("duplicate: %+v", e.Error)
	}
	expect(t, do(t, req{method: "POST", path: "/v1/capsules", cred: srv.admin, body: map[string]any{"name": "Bad_Name"}}), http.StatusBadRequest)
	expect(t, do(t, req{method: "POST", path: "/v1/capsules", cred: srv.admin, body: map[string]any{"name": "x", "description": strings.Repeat("d", 2<<20)}}), http.StatusRequestEntityTooLarge)
	addText(t, "life", map[string]any{"content": "alpha beta gamma"}, http.StatusCreated)

	var c struct {
		Name       string `json:"name"`
		ItemCount  int    `json:"item_count"`
		ChunkCount int    `json:"chunk_count"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/life", cred: srv.admin}), http.StatusOK).JSON(t, &c)
	if c.Name != "life" || c.ItemCount != 1 || c.ChunkCount != 1 {
		t.Fatalf("capsule %+v", c)
	}
	var list struct {
		Data []struct{ Name string } `json:"data"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules", cred: srv.admin}), http.StatusOK).JSON(t, &list)
	found := false
	for _, x := range list.Data {
		found = found || x.Name == "life"
	}
	if !found {
		t.Fatalf("life not listed: %+v", list)
	}
	expect(t, do(t, req{method: "DELETE", path: "/v1/capsules/life", cred: srv.admin}), http.StatusNoContent)
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/life", cred: srv.admin}), http.StatusNotFound)
	expect(t, do(t, req{method: "DELETE", path: "/v1/capsules/life", cred: srv.admin}), http.StatusNotFound)
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/NOPE", cred: srv.admin}), http.StatusBadRequest)
	expect(t, do(t, req{method: "DELETE", path: "/v1/capsules/NOPE", cred: srv.admin}), http.StatusBadRequest)
	query(t, "life", map[string]any{"query": "alpha"}, http.StatusNotFound)
}

func TestItems(t *testing.T) {
	t.Parallel()
	createCapsule(t, "items")
	it := addText(t, "items", map[string]any{"content": "The quick brown fox.", "uri": "doc://fox", "metadata": map[string]any{"lang": "en"}}, http.StatusCreated)
	if it.Status != "ready" || it.Kind != "text" || it.ChunkCount != 1 || it.URI != "doc://fox" || it.Metadata["lang"] != "en" {
		t.Fatalf("added %+v", it)
	}
	// Same content, same uri: the same item (200), unchanged.
	again := addText(t, "items", map[string]any{"content": "The quick brown fox.", "uri": "doc://fox", "metadata": map[string]any{"lang": "en"}}, http.StatusOK)
	if again.ID != it.ID || again.ContentHash != it.ContentHash {
		t.Fatalf("dedupe: %+v vs %+v", again, it)
	}
	// New content at the same uri: an update of the same item.
	upd := addText(t, "items", map[string]any{"content": "The lazy dog sleeps.", "uri": "doc://fox"}, http.StatusOK)
	if upd.ID != it.ID || upd.ContentHash == it.ContentHash || upd.Status != "ready" {
		t.Fatalf("update: %+v", upd)
	}
	if hits := query(t, "items", map[string]any{"query": "fox"}, http.StatusOK); len(hits) != 0 {
		t.Fatalf("old content still found: %+v", hits)
	}
	if hits := query(t, "items", map[string]any{"query": "dog"}, http.StatusOK); len(hits) != 1 || hits[0].ItemID != it.ID {
		t.Fatalf("new content: %+v", hits)
	}
	noURI := addText(t, "items", map[string]any{"content": "Second item."}, http.StatusCreated)
	if !strings.HasPrefix(noURI.URI, "sha256:") {
		t.Fatalf("default uri %q", noURI.URI)
	}
	// Bad bodies.
	for _, b := range []any{
		map[string]any{"content": ""},
		map[string]any{"content": "x", "extra": 1},
		map[string]any{"content": "x", "time_authored": "yesterday"},
		map[string]any{"content": "   "},
		"not json",
	} {
		expect(t, do(t, req{method: "POST", path: "/v1/capsules/items/items", cred: srv.admin, body: b}), http.StatusBadRequest)
	}
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/nope/items", cred: srv.admin, body: map[string]any{"content": "x"}}), http.StatusNotFound)
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/items/items", cred: srv.admin, body: map[string]any{"content": strings.Repeat("x", 2<<20)}}), http.StatusRequestEntityTooLarge)

	// Get, text, list, reindex, delete.
	var got wireItem
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items/" + it.ID, cred: srv.admin}), http.StatusOK).JSON(t, &got)
	if got.ID != it.ID {
		t.Fatalf("get %+v", got)
	}
	var text struct {
		Item wireItem `json:"item"`
		Text string   `json:"text"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items/" + it.ID + "/text", cred: srv.admin}), http.StatusOK).JSON(t, &text)
	if text.Text != "The lazy dog sleeps." {
		t.Fatalf("text %q", text.Text)
	}
	var page struct {
		Data []wireItem `json:"data"`
		Next *string    `json:"next"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items?limit=1", cred: srv.admin}), http.StatusOK).JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != noURI.ID || page.Next == nil {
		t.Fatalf("page 1: %+v", page)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items?limit=1&after=" + *page.Next, cred: srv.admin}), http.StatusOK).JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != it.ID || page.Next != nil {
		t.Fatalf("page 2: %+v", page)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items?status=failed", cred: srv.admin}), http.StatusOK).JSON(t, &page)
	if len(page.Data) != 0 {
		t.Fatalf("failed items: %+v", page)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items?status=bogus", cred: srv.admin}), http.StatusBadRequest)
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/nope/items", cred: srv.admin}), http.StatusNotFound)

	var re wireItem
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/items/items/" + it.ID + "/reindex", cred: srv.admin}), http.StatusAccepted).JSON(t, &re)
	if re.Status != "queued" {
		t.Fatalf("reindex %+v", re)
	}
	missing := "/v1/capsules/items/items/itm_000000000000aaaaaaaaaaaaaaaa"
	expect(t, do(t, req{method: "GET", path: missing, cred: srv.admin}), http.StatusNotFound)
	expect(t, do(t, req{method: "GET", path: missing + "/text", cred: srv.admin}), http.StatusNotFound)
	expect(t, do(t, req{method: "POST", path: missing + "/reindex", cred: srv.admin}), http.StatusNotFound)
	expect(t, do(t, req{method: "DELETE", path: missing, cred: srv.admin}), http.StatusNotFound)
	for _, p := range []string{"/v1/capsules/items/items/bad-id", "/v1/capsules/items/items/bad-id/text"} {
		expect(t, do(t, req{method: "GET", path: p, cred: srv.admin}), http.StatusBadRequest)
	}
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/items/items/bad-id/reindex", cred: srv.admin}), http.StatusBadRequest)
	expect(t, do(t, req{method: "DELETE", path: "/v1/capsules/items/items/bad-id", cred: srv.admin}), http.StatusBadRequest)

	expect(t, do(t, req{method: "DELETE", path: "/v1/capsules/items/items/" + noURI.ID, cred: srv.admin}), http.StatusNoContent)
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/items/items/" + noURI.ID, cred: srv.admin}), http.StatusNotFound)
}

// TestItemIdentity: one document sent by two routes is one item (the CLI's
// file:///abs/path, a form upload's file:name), and identical bytes sent
// again keep the fields the request leaves out (#20 points 5 and 6).
func TestItemIdentity(t *testing.T) {
	t.Parallel()
	createCapsule(t, "identity")
	md := []byte("# Handbook\n\nThe office opens at nine and closes at six.\n")
	item := func(r response, status int) wireItem {
		t.Helper()
		var it wireItem
		expect(t, r, status).JSON(t, &it)
		return it
	}
	// As capsuled add sends it: an absolute file URI (with a dot segment),
	// metadata and a time authored.
	first := item(upload(t, "identity", "handbook.md", "", md, map[string]string{
		"uri": "file:///home/ana/docs/./handbook.md", "metadata": `{"team":"people"}`, "time_authored": "2024-05-01T00:00:00Z"}), http.StatusCreated)
	if first.URI != "file:///home/ana/docs/handbook.md" || first.Metadata["team"] != "people" || first.TimeAuthored == nil {
		t.Fatalf("first: %+v", first)
	}
	// As curl -F file=@docs/handbook.md sends it: no uri, no fields.
	again := item(upload(t, "identity", "handbook.md", "", md, nil), http.StatusOK)
	if again.ID != first.ID || again.URI != first.URI || again.Metadata["team"] != "people" ||
		again.TimeAuthored == nil || *again.TimeAuthored != *first.TimeAuthored {
		t.Fatalf("re-upload without fields: %+v, want %+v unchanged", again, first)
	}
	// The same URI spelled otherwise, under another file name.
	spelled := item(upload(t, "identity", "copy.md", "", md, map[string]string{"uri": "FILE://localhost/home/ana//docs/handbook.md"}), http.StatusOK)
	if spelled.ID != first.ID || spelled.Metadata["team"] != "people" || spelled.FileName != "handbook.md" {
		t.Fatalf("normalised uri: %+v", spelled)
	}
	if hits := query(t, "identity", map[string]any{"query": "when does the office open"}, http.StatusOK); len(hits) != 1 || hits[0].ItemID != first.ID {
		t.Fatalf("hits %+v, want the one chunk once", hits)
	}
	// Fields sent explicitly replace the item's.
	meta := item(upload(t, "identity", "handbook.md", "", md, map[string]string{"metadata": `{"team":"ops"}`}), http.StatusOK)
	if meta.ID != first.ID || meta.Metadata["team"] != "ops" || meta.TimeAuthored == nil || *meta.TimeAuthored != *first.TimeAuthored {
		t.Fatalf("explicit metadata: %+v", meta)
	}
	when := item(upload(t, "identity", "handbook.md", "", md, map[string]string{"time_authored": "2020-01-02T03:04:05Z"}), http.StatusOK)
	if when.Metadata["team"] != "ops" || when.TimeAuthored == nil || !strings.HasPrefix(*when.TimeAuthored, "2020-01-02T03:04:05") {
		t.Fatalf("explicit time_authored: %+v", when)
	}
	// A text item with the same bytes is another kind of item; a text sent
	// twice without a uri is one item, and keeps its metadata.
	text := addText(t, "identity", map[string]any{"content": string(md), "metadata": map[string]any{"lang": "en"}}, http.StatusCreated)
	if text.ID == first.ID {
		t.Fatalf("a text item merged with the file item: %+v", text)
	}
	textAgain := addText(t, "identity", map[string]any{"content": string(md)}, http.StatusOK)
	if textAgain.ID != text.ID || textAgain.Metadata["lang"] != "en" {
		t.Fatalf("text again: %+v", textAgain)
	}
	// New bytes under the item's uri update it.
	upd := item(upload(t, "identity", "handbook.md", "", []byte("# Handbook\n\nThe office opens at ten.\n"), map[string]string{"uri": "file:///home/ana/docs/handbook.md"}), http.StatusOK)
	if upd.ID != first.ID || upd.ContentHash == first.ContentHash {
		t.Fatalf("update: %+v", upd)
	}
}

func TestFileUploads(t *testing.T) {
	t.Parallel()
	createCapsule(t, "files")
	md := []byte("# Install\n\nRun the installer on Linux.\n\n## Configure\n\nEdit the settings file.\n")
	resp := expect(t, upload(t, "files", "guide.md", "", md, map[string]string{"metadata": `{"team":"docs","year":2024}`, "time_authored": "2024-05-01T00:00:00Z"}), http.StatusCreated)
	var it wireItem
	resp.JSON(t, &it)
	if it.Status != "ready" || it.Kind != "file" || it.FileName != "guide.md" || it.FileType != "text/markdown" || it.URI != "file:guide.md" || it.Metadata["team"] != "docs" {
		t.Fatalf("markdown: %+v", it)
	}
	hits := query(t, "files", map[string]any{"query": "installer linux"}, http.StatusOK)
	if len(hits) == 0 || hits[0].ItemID != it.ID || hits[0].Kind != "file" {
		t.Fatalf("hits %+v", hits)
	}
	// A corrupt PDF fails with a readable reason; its text is 409.
	resp = expect(t, upload(t, "files", "broken.pdf", "application/pdf", []byte("%PDF-1.7 garbage"), nil), http.StatusCreated)
	resp.JSON(t, &it)
	if it.Status != "failed" || it.Error == nil || *it.Error == "" {
		t.Fatalf("corrupt pdf: %+v", it)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/files/items/" + it.ID + "/text", cred: srv.admin}), http.StatusConflict)
	// An image is unsupported.
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	resp = expect(t, upload(t, "files", "pic.png", "", png, nil), http.StatusCreated)
	resp.JSON(t, &it)
	if it.Status != "failed" || it.FileType != "image/png" || !strings.Contains(*it.Error, "unsupported") {
		t.Fatalf("png: %+v %v", it, *it.Error)
	}
	// Bad multipart bodies.
	expect(t, upload(t, "files", "a.txt", "", []byte("x"), map[string]string{"bogus": "1"}), http.StatusBadRequest)
	expect(t, upload(t, "files", "a.txt", "", []byte("x"), map[string]string{"metadata": "[1]"}), http.StatusBadRequest)
	expect(t, upload(t, "files", "a.txt", "", []byte("x"), map[string]string{"time_authored": "nope"}), http.StatusBadRequest)
	expect(t, upload(t, "nope", "a.txt", "", []byte("x"), nil), http.StatusNotFound)
}

func TestQuery(t *testing.T) {
	t.Parallel()
	createCapsule(t, "q")
	docs := []map[string]any{
		{"content": "Solar panels convert sunlight into electricity.", "uri": "kb://energy/solar", "metadata": map[string]any{"year": 2021, "lang": "en", "published": "2021-03-01T00:00:00Z"}},
		{"content": "Wind turbines convert wind into electricity.", "uri": "kb://energy/wind", "metadata": map[string]any{"year": 2023, "lang": "en", "tags": []any{"wind", "green"}}},
		{"content": "Electricity prices rose sharply this winter.", "uri": "kb://news/prices", "metadata": map[string]any{"year": 2024, "lang": "de"}, "time_authored": "2024-01-15T00:00:00Z"},
	}
	ids := map[string]string{}
	for _, d := range docs {
		ids[d["uri"].(string)] = addText(t, "q", d, http.StatusCreated).ID
	}
	uris := func(hits []wireHit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.URI)
		}
		return out
	}
	hits := query(t, "q", map[string]any{"query": "electricity"}, http.StatusOK)
	if len(hits) != 3 {
		t.Fatalf("all: %v", uris(hits))
	}
	for i, h := range hits {
		if h.Score < 0 || h.Score > 1 || (i > 0 && h.Score > hits[i-1].Score) || h.Content == "" || h.Metadata == nil {
			t.Fatalf("hit %d: %+v", i, h)
		}
	}
	// Host-based addressing reaches the same capsule.
	resp := expect(t, do(t, req{method: "POST", path: "/query", host: "q.capsules.test", cred: srv.admin, body: map[string]any{"query": "electricity"}}), http.StatusOK)
	var byHost []wireHit
	resp.JSON(t, &byHost)
	if len(byHost) != 3 || byHost[0].ItemID != hits[0].ItemID {
		t.Fatalf("by host: %+v", byHost)
	}
	expect(t, do(t, req{method: "POST", path: "/query", host: "nope.capsules.test", cred: srv.admin, body: map[string]any{"query": "x"}}), http.StatusNotFound)
	expect(t, do(t, req{method: "POST", path: "/query", host: "q.elsewhere.test", cred: srv.admin, body: map[string]any{"query": "x"}}), http.StatusNotFound)
	expect(t, do(t, req{method: "POST", path: "/query", host: "q.capsules.test", cred: srv.admin, body: map[string]any{"query": ""}}), http.StatusBadRequest)

	filters := []struct {
		name     string
		wishlist map[string]any
		want     []string
	}{
		{"uri_prefix", map[string]any{"uri_prefix": "kb://energy/"}, []string{"kb://energy/solar", "kb://energy/wind"}},
		{"metadata eq", map[string]any{"metadata": map[string]any{"lang": "de"}}, []string{"kb://news/prices"}},
		{"metadata gte", map[string]any{"metadata": map[string]any{"year": map[string]any{"gte": 2023}}}, []string{"kb://energy/wind", "kb://news/prices"}},
		{"metadata in", map[string]any{"metadata": map[string]any{"year": map[string]any{"in": []any{2021, 2024}}}}, []string{"kb://energy/solar", "kb://news/prices"}},
		{"metadata nin", map[string]any{"metadata": map[string]any{"year": map[string]any{"nin": []any{2021, 2024}}}}, []string{"kb://energy/wind"}},
		{"metadata ne", map[string]any{"metadata": map[string]any{"lang": map[string]any{"ne": "en"}}}, []string{"kb://news/prices"}},
		{"metadata exists", map[string]any{"metadata": map[string]any{"tags": map[string]any{"exists": true}}}, []string{"kb://energy/wind"}},
		{"metadata array eq", map[string]any{"metadata": map[string]any{"tags": "green"}}, []string{"kb://energy/wind"}},
		{"metadata time lt", map[string]any{"metadata": map[string]any{"published": map[string]any{"lt": "2022-01-01T00:00:00Z"}}}, []string{"kb://energy/solar"}},
		{"item_ids", map[string]any{"item_ids": []string{ids["kb://energy/wind"]}}, []string{"kb://energy/wind"}},
		{"kinds", map[string]any{"kinds": []string{"file"}}, nil},
		{"file_types", map[string]any{"file_types": []string{"application/pdf"}}, nil},
		{"authored_before", map[string]any{"authored_before": "2024-06-01T00:00:00Z"}, []string{"kb://news/prices"}},
		{"added_after", map[string]any{"added_after": "2000-01-01T00:00:00Z", "mode": "keyword"}, []string{"kb://energy/solar", "kb://energy/wind", "kb://news/prices"}},
		{"added_before", map[string]any{"added_before": "2000-01-01T00:00:00Z"}, nil},
		{"authored_after", map[string]any{"authored_after": "2030-01-01T00:00:00Z"}, nil},
		// Each chunk holds "electricity" once at the same length: each is the
		// capsule's best match for the query's one term, so each scores 1.
		{"min_score reached", map[string]any{"min_score": 1, "mode": "keyword"}, []string{"kb://energy/solar", "kb://energy/wind", "kb://news/prices"}},
	}
	for _, f := range filters {
		t.Run(f.name, func(t *testing.T) {
			got := uris(query(t, "q", map[string]any{"query": "electricity", "wishlist": f.wishlist}, http.StatusOK))
			if strings.Join(sorted(got), ",") != strings.Join(f.want, ",") {
				t.Fatalf("got %v, want %v", got, f.want)
			}
		})
	}
	// No chunk is the best match for all three terms: min_score 0.9 leaves
	// none; 0.4 keeps the two chunks with two of the three (the rare
	// terms weigh most).
	for _, tc := range []struct {
		min  float64
		want []string
	}{{0.9, nil}, {0.4, []string{"kb://energy/solar", "kb://news/prices"}}} {
		got := uris(query(t, "q", map[string]any{"query": "electricity prices solar", "wishlist": map[string]any{"min_score": tc.min, "mode": "keyword"}}, http.StatusOK))
		if strings.Join(sorted(got), ",") != strings.Join(tc.want, ",") {
			t.Fatalf("min_score %v: got %v, want %v", tc.min, got, tc.want)
		}
	}
	// Recency prefers the newest item.
	rec := query(t, "q", map[string]any{"query": "electricity", "wishlist": map[string]any{"recency": map[string]any{"weight": 1, "half_life_days": 1, "field": "time_authored"}}}, http.StatusOK)
	if rec[0].URI == "kb://news/prices" {
		t.Fatalf("authored 2024 ranks above items authored now: %v", uris(rec))
	}
	if hits := query(t, "q", map[string]any{"query": "electricity", "limit": 1}, http.StatusOK); len(hits) != 1 {
		t.Fatalf("limit 1: %d", len(hits))
	}

	bad := []struct {
		name  string
		body  any
		param string
	}{
		{"empty query", map[string]any{"query": ""}, "query"},
		{"blank query", map[string]any{"query": "   "}, "query"},
		{"long query", map[string]any{"query": strings.Repeat("a", 16385)}, "query"},
		{"limit over", map[string]any{"query": "x", "limit": 101}, "limit"},
		{"limit zero", map[string]any{"query": "x", "limit": 0}, "limit"},
		{"unknown key", map[string]any{"query": "x", "wishlist": map[string]any{"colour": "red"}}, "wishlist"},
		{"bad date", map[string]any{"query": "x", "wishlist": map[string]any{"added_after": "last week"}}, "wishlist"},
		{"bad mode", map[string]any{"query": "x", "wishlist": map[string]any{"mode": "fuzzy"}}, "wishlist"},
		{"bad operator", map[string]any{"query": "x", "wishlist": map[string]any{"metadata": map[string]any{"year": map[string]any{"between": 1}}}}, "wishlist"},
		{"in not array", map[string]any{"query": "x", "wishlist": map[string]any{"metadata": map[string]any{"year": map[string]any{"in": 1}}}}, "wishlist"},
		{"date range", map[string]any{"query": "x", "wishlist": map[string]any{"added_after": "2024-01-02T00:00:00Z", "added_before": "2024-01-01T00:00:00Z"}}, "wishlist.added_before"},
		{"max chunks", map[string]any{"query": "x", "wishlist": map[string]any{"max_chunks_per_item": 0}}, "wishlist"},
		{"wishlist type", map[string]any{"query": "x", "wishlist": []any{}}, "wishlist"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			e := expect(t, do(t, req{method: "POST", path: "/capsules/q/query", cred: srv.admin, body: b.body}), http.StatusBadRequest).Err(t)
			if e.Error.Param == nil || !strings.HasPrefix(*e.Error.Param, b.param) {
				t.Fatalf("param %v, want prefix %q (%s)", e.Error.Param, b.param, e.Error.Message)
			}
		})
	}
	e := expect(t, do(t, req{method: "POST", path: "/capsules/q/query", cred: srv.admin, body: map[string]any{"query": "x", "wishlist": map[string]any{"mode": "semantic"}}}), http.StatusUnprocessableEntity).Err(t)
	if *e.Error.Code != "semantic_search_off" {
		t.Fatalf("semantic: %+v", e.Error)
	}
	expect(t, do(t, req{method: "POST", path: "/capsules/q/query", cred: srv.admin, body: map[string]any{"query": strings.Repeat("a", 2<<20)}}), http.StatusRequestEntityTooLarge)
	expect(t, do(t, req{method: "POST", path: "/query", host: "q.capsules.test", cred: srv.admin, body: map[string]any{"query": strings.Repeat("a", 2<<20)}}), http.StatusRequestEntityTooLarge)
	expect(t, do(t, req{method: "POST", path: "/query", host: "q.capsules.test", cred: srv.admin, body: map[string]any{"query": "x", "wishlist": map[string]any{"mode": "semantic"}}}), http.StatusUnprocessableEntity)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestCapsuleAllowLists(t *testing.T) {
	t.Parallel()
	createCapsule(t, "open-a")
	createCapsule(t, "secret-b")
	addText(t, "secret-b", map[string]any{"content": "classified"}, http.StatusCreated)
	_, reader := newKey(t, map[string]any{"scopes": []string{"capsules:read"}, "capsules": []string{"open-a"}})
	_, writer := newKey(t, map[string]any{"scopes": []string{"capsules:write", "capsules:read"}, "capsules": []string{"open-a"}})
	_, chatOnly := newKey(t, map[string]any{"scopes": []string{"chat"}})

	var list struct {
		Data []struct{ Name string } `json:"data"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/capsules", cred: reader}), http.StatusOK).JSON(t, &list)
	for _, c := range list.Data {
		if c.Name != "open-a" {
			t.Fatalf("listed %q outside the allow-list", c.Name)
		}
	}
	expect(t, do(t, req{method: "POST", path: "/capsules/open-a/query", cred: reader, body: map[string]any{"query": "x"}}), http.StatusOK)
	for _, r := range []req{
		{method: "POST", path: "/capsules/secret-b/query", body: map[string]any{"query": "classified"}},
		{method: "POST", path: "/query", host: "secret-b.capsules.test", body: map[string]any{"query": "classified"}},
		{method: "GET", path: "/v1/capsules/secret-b"},
		{method: "GET", path: "/v1/capsules/secret-b/items"},
		{method: "GET", path: "/v1/capsules/secret-b/items/itm_000000000000aaaaaaaaaaaaaaaa"},
		{method: "GET", path: "/v1/capsules/secret-b/items/itm_000000000000aaaaaaaaaaaaaaaa/text"},
	} {
		r.cred = reader
		if e := expect(t, do(t, r), http.StatusForbidden).Err(t); *e.Error.Code != "capsule_not_allowed" {
			t.Fatalf("%s %s: %+v", r.method, r.path, e.Error)
		}
	}
	// Writing needs capsules:write; the writer is still bound to its list.
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/open-a/items", cred: reader, body: map[string]any{"content": "x"}}), http.StatusForbidden)
	for _, r := range []req{
		{method: "POST", path: "/v1/capsules", body: map[string]any{"name": "secret-c"}},
		{method: "DELETE", path: "/v1/capsules/secret-b"},
		{method: "POST", path: "/v1/capsules/secret-b/items", body: map[string]any{"content": "x"}},
		{method: "DELETE", path: "/v1/capsules/secret-b/items/itm_000000000000aaaaaaaaaaaaaaaa"},
		{method: "POST", path: "/v1/capsules/secret-b/items/itm_000000000000aaaaaaaaaaaaaaaa/reindex"},
	} {
		r.cred = writer
		expect(t, do(t, r), http.StatusForbidden)
	}
	for _, r := range []req{
		{method: "GET", path: "/v1/capsules"},
		{method: "POST", path: "/capsules/open-a/query", body: map[string]any{"query": "x"}},
	} {
		r.cred = chatOnly
		expect(t, do(t, r), http.StatusForbidden)
		r.cred = ""
		expect(t, do(t, r), http.StatusUnauthorized)
	}
	for _, r := range []req{
		{method: "POST", path: "/query", host: "open-a.capsules.test", body: map[string]any{"query": "x"}},
		{method: "POST", path: "/v1/capsules", body: map[string]any{"name": "zz"}},
		{method: "GET", path: "/v1/capsules/open-a"},
		{method: "DELETE", path: "/v1/capsules/open-a"},
		{method: "GET", path: "/v1/capsules/open-a/items"},
		{method: "POST", path: "/v1/capsules/open-a/items", body: map[string]any{"content": "x"}},
		{method: "GET", path: "/v1/capsules/open-a/items/itm_000000000000aaaaaaaaaaaaaaaa"},
		{method: "DELETE", path: "/v1/capsules/open-a/items/itm_000000000000aaaaaaaaaaaaaaaa"},
		{method: "GET", path: "/v1/capsules/open-a/items/itm_000000000000aaaaaaaaaaaaaaaa/text"},
		{method: "POST", path: "/v1/capsules/open-a/items/itm_000000000000aaaaaaaaaaaaaaaa/reindex"},
	} {
		expect(t, do(t, r), http.StatusUnauthorized)
		r.cred = chatOnly
		expect(t, do(t, r), http.StatusForbidden)
	}
}

// TestQueryNullWishlist: "wishlist": null is the default wishlist, as an
// absent one is (clients that serialise every optional field send null).
func TestQueryNullWishlist(t *testing.T) {
	createCapsule(t, "conf-nullwish")
	addText(t, "conf-nullwish", map[string]any{"content": "Tides rise and fall twice a day."}, http.StatusCreated)
	absent := query(t, "conf-nullwish", map[string]any{"query": "tides"}, http.StatusOK)
	null := query(t, "conf-nullwish", map[string]any{"query": "tides", "wishlist": nil}, http.StatusOK)
	if len(null) == 0 || len(null) != len(absent) || null[0].Content != absent[0].Content {
		t.Fatalf("null wishlist %+v, absent %+v", null, absent)
	}
	query(t, "conf-nullwish", map[string]any{"query": "tides", "wishlist": map[string]any{"mode": "bogus"}}, http.StatusBadRequest)
}

// TestQueryLong: a query that is itself a document (up to 16 KiB; BEIR's
// ArguAna queries are whole arguments) is answered; its repeated topic
// words find the document even when they come late in the text.
func TestQueryLong(t *testing.T) {
	createCapsule(t, "conf-longq")
	addText(t, "conf-longq", map[string]any{"content": "Glaciers carve valleys as they slowly move downhill."}, http.StatusCreated)
	addText(t, "conf-longq", map[string]any{"content": "Volcanoes erupt when magma rises through the crust."}, http.StatusCreated)
	var b strings.Builder
	for i := 0; b.Len() < 15000; i++ {
		fmt.Fprintf(&b, "filler%d words about nothing in particular number %d. ", i, i)
	}
	b.WriteString("But really: how do glaciers carve valleys? Glaciers, glaciers, valleys.")
	if b.Len() > 16384 {
		t.Fatalf("test query too long: %d", b.Len())
	}
	hits := query(t, "conf-longq", map[string]any{"query": b.String(), "wishlist": map[string]any{"mode": "keyword"}}, http.StatusOK)
	if len(hits) == 0 || !strings.Contains(hits[0].Content, "Glaciers") {
		t.Fatalf("a %d-byte query missed its topic: %+v", b.Len(), hits)
	}
	query(t, "conf-longq", map[string]any{"query": b.String()}, http.StatusOK) // hybrid: the vector from what fits the model
}

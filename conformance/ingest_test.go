package conformance_test

import (
	"archive/zip"
	"bytes"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// itemWithTimes is an item with its time_authored, which wireItem leaves out.
type itemWithTimes struct {
	wireItem
	TimeAuthored *string `json:"time_authored"`
}

func uploadItem(t *testing.T, capsule, name, partType string, content []byte, fields map[string]string) itemWithTimes {
	t.Helper()
	var it itemWithTimes
	resp := upload(t, capsule, name, partType, content, fields)
	if resp.Status != http.StatusCreated && resp.Status != http.StatusOK {
		t.Fatalf("upload %s: status %d: %s", name, resp.Status, resp.Body)
	}
	resp.JSON(t, &it)
	return it
}

// docxFile is a Word document with one paragraph and the core properties
// core (docProps/core.xml).
func docxFile(t *testing.T, text, core string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>` + text + `</w:t></w:r></w:p></w:body></w:document>`},
		{"docProps/core.xml", core},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFileMetadata: a file's own title, author, date, description and
// keywords become the item's metadata and time_authored; fields the client
// sends win; the authored_* filters then see the file's date.
func TestFileMetadata(t *testing.T) {
	t.Parallel()
	createCapsule(t, "filemeta")
	md := []byte("---\ntitle: Leave Policy\nauthor: Ada Lovelace\ndate: 2019-05-17\ndescription: How paid leave works.\ntags: [hr, leave]\n---\n# Leave\n\nEvery employee gets thirty days of paid leave.\n")
	it := uploadItem(t, "filemeta", "leave.md", "", md, nil)
	want := map[string]any{"title": "Leave Policy", "author": "Ada Lovelace", "date": "2019-05-17T00:00:00Z",
		"description": "How paid leave works.", "keywords": []any{"hr", "leave"}}
	if it.Status != "ready" || !reflect.DeepEqual(it.Metadata, want) || it.TimeAuthored == nil || *it.TimeAuthored != "2019-05-17T00:00:00Z" {
		t.Fatalf("markdown: %+v (time_authored %v)", it, deref(it.TimeAuthored))
	}
	// What the client sends wins, field by field.
	it = uploadItem(t, "filemeta", "leave2.md", "", md, map[string]string{"metadata": `{"title": "Mine", "team": "hr"}`, "time_authored": "2021-01-02T03:04:05Z"})
	if it.Metadata["title"] != "Mine" || it.Metadata["team"] != "hr" || it.Metadata["author"] != "Ada Lovelace" || deref(it.TimeAuthored) != "2021-01-02T03:04:05Z" {
		t.Fatalf("explicit fields: %+v (time_authored %v)", it.Metadata, deref(it.TimeAuthored))
	}
	// DOCX core properties.
	core := `<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/">` +
		`<dc:title>Expense Rules</dc:title><dc:creator>Grace Hopper</dc:creator><cp:keywords>expenses; travel</cp:keywords><dcterms:created>2018-02-03T04:05:06Z</dcterms:created></cp:coreProperties>`
	it = uploadItem(t, "filemeta", "expenses.docx", "", docxFile(t, "Receipts are kept for seven years.", core), nil)
	want = map[string]any{"title": "Expense Rules", "author": "Grace Hopper", "date": "2018-02-03T04:05:06Z", "keywords": []any{"expenses", "travel"}}
	if it.Status != "ready" || !reflect.DeepEqual(it.Metadata, want) || deref(it.TimeAuthored) != "2018-02-03T04:05:06Z" {
		t.Fatalf("docx: %+v (time_authored %v)", it, deref(it.TimeAuthored))
	}
	// HTML head.
	page := []byte(`<html><head><title>Office Hours</title><meta name="author" content="Alan Turing"><meta name="description" content="When the office is open."><meta property="article:published_time" content="2017-06-07T08:00:00Z"></head><body><p>The office opens at nine.</p></body></html>`)
	it = uploadItem(t, "filemeta", "hours.html", "text/html", page, nil)
	want = map[string]any{"title": "Office Hours", "author": "Alan Turing", "date": "2017-06-07T08:00:00Z", "description": "When the office is open."}
	if it.Status != "ready" || !reflect.DeepEqual(it.Metadata, want) || deref(it.TimeAuthored) != "2017-06-07T08:00:00Z" {
		t.Fatalf("html: %+v (time_authored %v)", it, deref(it.TimeAuthored))
	}
	// A file without metadata keeps what was sent (nothing): no fields, no time authored.
	it = uploadItem(t, "filemeta", "plain.txt", "", []byte("Nothing about itself.\n"), nil)
	if len(it.Metadata) != 0 || it.TimeAuthored != nil {
		t.Fatalf("plain: %+v (time_authored %v)", it.Metadata, deref(it.TimeAuthored))
	}
	// Front matter that is not YAML gives no metadata; the text is still read.
	it = uploadItem(t, "filemeta", "broken.md", "", []byte("---\ntitle: [unclosed\n---\nText after broken front matter.\n"), nil)
	if it.Status != "ready" || len(it.Metadata) != 0 || it.TimeAuthored != nil {
		t.Fatalf("broken front matter: %+v (time_authored %v)", it, deref(it.TimeAuthored))
	}
	// The authored_* filters see the files' dates.
	hits := query(t, "filemeta", map[string]any{"query": "paid leave receipts office", "limit": 10,
		"wishlist": map[string]any{"mode": "keyword", "authored_before": "2019-01-01T00:00:00Z"}}, http.StatusOK)
	var names []string
	for _, h := range hits {
		names = append(names, h.URI)
	}
	if strings.Join(names, ",") != "file:expenses.docx,file:hours.html" && strings.Join(names, ",") != "file:hours.html,file:expenses.docx" {
		t.Fatalf("authored before 2019: %v", names)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestBinaryUploadsFail: binary junk is refused with a reason on the item,
// whatever type the client declares for it; 8-bit text still reads.
func TestBinaryUploadsFail(t *testing.T) {
	t.Parallel()
	createCapsule(t, "binary")
	rng := rand.New(rand.NewPCG(9, 9))
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(rng.UintN(256))
	}
	high := make([]byte, 4096) // no control bytes to give it away
	for i := range high {
		high[i] = byte(0x20 + rng.UintN(0xE0))
	}
	for _, tt := range []struct {
		name, partType string
		content        []byte
		reason         string
	}{
		{"blob.bin", "", junk, "unsupported file type application/octet-stream: binary content"},
		{"blob2.bin", "application/octet-stream", junk, "unsupported file type application/octet-stream: binary content"},
		{"blob.txt", "", junk, "unsupported file type application/octet-stream: binary content"},
		{"blob3.bin", "text/plain", junk, "binary content declared as text/plain"},
		{"blob4.bin", "text/plain; charset=utf-8", high, "are not valid UTF-8"},
		{"blob.md", "text/markdown", junk, "binary content declared as text/markdown"},
	} {
		it := uploadItem(t, "binary", tt.name, tt.partType, tt.content, nil)
		if it.Status != "failed" || it.Error == nil || !strings.Contains(*it.Error, tt.reason) || it.ChunkCount != 0 {
			t.Errorf("%s (%s): status %s, error %q, %d chunks", tt.name, tt.partType, it.Status, deref(it.Error), it.ChunkCount)
		}
		// The failed item's text is not there.
		expect(t, do(t, req{method: "GET", path: "/v1/capsules/binary/items/" + it.ID + "/text", cred: srv.admin}), http.StatusConflict)
	}
	// Windows-1252 text without a declared type is still text.
	it := uploadItem(t, "binary", "latin1.txt", "", []byte("Caf\xe9 cr\xe8me br\xfbl\xe9e, na\xefve fa\xe7ade.\n"), nil)
	if it.Status != "ready" {
		t.Fatalf("latin-1 text: %+v %q", it, deref(it.Error))
	}
	if hits := query(t, "binary", map[string]any{"query": "crème brûlée", "wishlist": map[string]any{"mode": "keyword"}}, http.StatusOK); len(hits) != 1 || !strings.Contains(hits[0].Content, "Café crème brûlée") {
		t.Fatalf("latin-1 hits: %+v", hits)
	}
}

package parse

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"capsuled/internal/domain"
	"capsuled/internal/ingest"
	"capsuled/internal/ingest/detect"
)

type wantBlock struct {
	kind  ingest.BlockKind
	level int
	path  string // heading path joined by " > "
	text  string
}

func blocksOf(doc ingest.Document) []wantBlock {
	out := make([]wantBlock, len(doc.Blocks))
	for i, b := range doc.Blocks {
		out[i] = wantBlock{b.Kind, b.Level, strings.Join(b.Path, " > "), doc.Text[b.Start:b.End]}
	}
	return out
}

func extractFixture(t *testing.T, name, mime string) (ingest.Document, error) {
	t.Helper()
	data := readFixture(t, name)
	return Extract(context.Background(), bytes.NewReader(data), name, mime, 0)
}

func TestExtractFixtures(t *testing.T) {
	tests := []struct {
		file, mime string
		wantType   string
		want       []wantBlock
	}{
		{"sample.txt", "", "text/plain", []wantBlock{
			{ingest.BlockParagraph, 0, "", "Capsuled stores items.\nIt chunks them."},
			{ingest.BlockParagraph, 0, "", "Second paragraph here."},
			{ingest.BlockParagraph, 0, "", "Third paragraph."},
		}},
		{"sample.md", "text/x-markdown; charset=utf-8", "text/markdown", []wantBlock{
			{ingest.BlockHeading, 1, "Install", "Install"},
			{ingest.BlockParagraph, 0, "Install", "Capsuled is one binary. See the guide and capsuled serve."},
			{ingest.BlockHeading, 2, "Install > Linux", "Linux"},
			{ingest.BlockParagraph, 0, "Install > Linux", "Download it with curl."},
			{ingest.BlockCode, 0, "Install > Linux", "curl -LO https://example.com/capsuled\n\nchmod +x capsuled"},
			{ingest.BlockList, 0, "Install > Linux", "- first item\n- second item\n  - nested item\n1. numbered"},
			{ingest.BlockTable, 0, "Install > Linux", "Flag: --data; Meaning: data directory\nFlag: --port; Meaning: listen port | tcp"},
			{ingest.BlockHeading, 2, "Install > Setext Heading", "Setext Heading"},
			{ingest.BlockCode, 0, "Install > Setext Heading", "indented code\nmore code"},
			{ingest.BlockParagraph, 0, "Install > Setext Heading", "A quote with snake_case_name."},
			{ingest.BlockParagraph, 0, "Install > Setext Heading", "diagram and https://capsuled.dev plus bold."},
		}},
		{"sample.html", "", "text/html", []wantBlock{
			{ingest.BlockHeading, 1, "Capsuled & friends", "Capsuled & friends"},
			{ingest.BlockParagraph, 0, "Capsuled & friends", "Fast retrieval, self-hosted. Café <3"},
			{ingest.BlockHeading, 2, "Capsuled & friends > Usage", "Usage"},
			{ingest.BlockParagraph, 0, "Capsuled & friends > Usage", "Run it:\ntwice."},
			{ingest.BlockCode, 0, "Capsuled & friends > Usage", "capsuled serve\n  --data ./d"},
			{ingest.BlockList, 0, "Capsuled & friends > Usage", "- one\n- two\n  - two-a"},
			{ingest.BlockList, 0, "Capsuled & friends > Usage", "1. first\n2. second"},
			{ingest.BlockTable, 0, "Capsuled & friends > Usage", "Name: a.txt; Size: 3\nName: b.txt"},
		}},
		{"latin1.html", "text/html", "text/html", []wantBlock{{ingest.BlockParagraph, 0, "", "Café crème"}}},
		{"sample.pdf", "application/pdf", "application/pdf", []wantBlock{
			{ingest.BlockPage, 0, "", "Capsuled Guide\n\nCapsules hold items. Each item is chunked.\nChunks are embedded (in process)."},
			{ingest.BlockPage, 0, "", "Page two talks about search.\nHybrid search fuses BM25 and vectors."},
		}},
		{"sample.docx", "", detect.DOCX, []wantBlock{
			{ingest.BlockHeading, 1, "Capsuled Manual", "Capsuled Manual"},
			{ingest.BlockHeading, 1, "Install", "Install"},
			{ingest.BlockParagraph, 0, "Install", "Download the binary.\tThen run it.\nSecond line."},
			{ingest.BlockHeading, 2, "Install > Linux", "Linux"},
			{ingest.BlockList, 0, "Install > Linux", "- Unpack the archive\n- Run capsuled serve"},
			{ingest.BlockTable, 0, "Install > Linux", "Flag: --data; Meaning: data directory"},
			{ingest.BlockParagraph, 0, "Install > Linux", "Deleted text is not here."},
		}},
		{"sample.csv", "application/csv", "text/csv", []wantBlock{
			{ingest.BlockRow, 0, "", `name: Ada; city: London; notes, quoted: wrote "notes"`},
			{ingest.BlockRow, 0, "", "name: Linus; notes, quoted: kernel"},
			{ingest.BlockRow, 0, "", "name: Extra; city: Oslo; notes, quoted: x; col4: surplus"},
		}},
		{"sample.tsv", "", "text/tab-separated-values", []wantBlock{
			{ingest.BlockRow, 0, "", "name: Ada; age: 36"},
			{ingest.BlockRow, 0, "", "name: Alan; age: 41"},
		}},
		{"sample.json", "", "application/json", []wantBlock{
			{ingest.BlockRow, 0, "", "meta.n: 1.5\nmeta.none: null\nmeta.ok: true\ntags[0]: a\ntags[1]: b\ntitle: First"},
			{ingest.BlockRow, 0, "", "tags: []\ntitle: Second spaced"},
		}},
		{"sample.jsonl", "", "application/x-ndjson", []wantBlock{
			{ingest.BlockRow, 0, "", "id: 1\ntext: hello"},
			{ingest.BlockRow, 0, "", "id: 2\nnested.k: v\ntext: world"},
		}},
		{"sample.go", "", "text/x-go", []wantBlock{
			{ingest.BlockCode, 0, "", "package main"},
			{ingest.BlockCode, 0, "", `import "fmt"`},
			{ingest.BlockCode, 0, "", "// Hello greets.\nfunc Hello(name string) string {\n\tmsg := \"hi \" + name\n\n\treturn msg\n}"},
			{ingest.BlockCode, 0, "", "type T struct {\n\tA int\n}"},
			{ingest.BlockCode, 0, "", "func main() {\n\tfmt.Println(Hello(\"x\"))\n}"},
		}},
		{"sample.py", "text/plain", "text/x-python", []wantBlock{
			{ingest.BlockCode, 0, "", "import os"},
			{ingest.BlockCode, 0, "", "def f(x):\n    y = x + 1\n\n    return y"},
			{ingest.BlockCode, 0, "", "class C:\n    pass"},
		}},
		{"invalid-utf8.txt", "", "text/plain", []wantBlock{
			{ingest.BlockParagraph, 0, "", "café ok\nbad \uFFFD\uFFFD byte and NUL\nwindows line"},
		}},
		{"latin1.txt", "", "text/plain", []wantBlock{{ingest.BlockParagraph, 0, "", "Café crème brûlée"}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc, err := extractFixture(t, tt.file, tt.mime)
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if doc.MIMEType != tt.wantType {
				t.Errorf("MIMEType = %q, want %q", doc.MIMEType, tt.wantType)
			}
			if got := blocksOf(doc); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("blocks:\n got %#v\nwant %#v", got, tt.want)
			}
			checkDocInvariants(t, doc)
		})
	}
}

// checkDocInvariants: clean text, ordered non-overlapping blocks inside it.
func checkDocInvariants(t testing.TB, doc ingest.Document) {
	t.Helper()
	if !isClean(doc.Text) {
		t.Errorf("text is not clean: %q", doc.Text)
	}
	prev := 0
	for i, b := range doc.Blocks {
		if b.Start < prev || b.End <= b.Start || b.End > len(doc.Text) {
			t.Fatalf("block %d [%d,%d) out of order or range (prev end %d, len %d)", i, b.Start, b.End, prev, len(doc.Text))
		}
		if strings.TrimSpace(doc.Text[b.Start:b.End]) == "" {
			t.Errorf("block %d is blank", i)
		}
		if b.Kind == ingest.BlockHeading && (b.Level < 1 || b.Level > 6 || len(b.Path) == 0 || b.Path[len(b.Path)-1] != doc.Text[b.Start:b.End]) {
			t.Errorf("heading block %d: level %d path %q", i, b.Level, b.Path)
		}
		prev = b.End
	}
}

func TestExtractErrors(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		file     string
		mime     string
		max      int64
		kind     domain.Kind
		contains string
	}{
		{"png", readFixture(t, "image.png"), "image.png", "", 0, domain.KindUnprocessable, "unsupported file type image/png"},
		{"png named txt", readFixture(t, "image.png"), "notes.txt", "", 0, domain.KindUnprocessable, "unsupported file type image/png"},
		{"random", readFixture(t, "random.bin"), "blob", "", 0, domain.KindUnprocessable, "unsupported file type application/octet-stream: binary content"},
		{"random named bin", readFixture(t, "random.bin"), "blob.bin", "application/octet-stream", 0, domain.KindUnprocessable, "unsupported file type application/octet-stream: binary content"},
		{"random declared text", readFixture(t, "random.bin"), "blob.bin", "text/plain", 0, domain.KindUnprocessable, "binary content declared as text/plain: 1"},
		{"random named txt", readFixture(t, "random.bin"), "notes.txt", "", 0, domain.KindUnprocessable, "unsupported file type application/octet-stream"},
		{"random declared json", readFixture(t, "random.bin"), "x", "application/json", 0, domain.KindUnprocessable, "control characters"},
		{"random declared markdown", readFixture(t, "random.bin"), "x.md", "text/markdown", 0, domain.KindUnprocessable, "control characters"},
		{"high bytes declared text", highBytes(), "blob.bin", "text/plain", 0, domain.KindUnprocessable, "are not valid UTF-8; upload text as UTF-8"},
		{"zip", readFixture(t, "notdocx.zip"), "archive.zip", "", 0, domain.KindUnprocessable, "unsupported file type application/zip"},
		{"zip as docx", readFixture(t, "notdocx.zip"), "report.docx", "", 0, domain.KindUnprocessable, "corrupt DOCX: word/document.xml is missing"},
		{"text as docx", []byte("hello"), "x.docx", detect.DOCX, 0, domain.KindUnprocessable, "corrupt DOCX: not a zip archive"},
		{"ole as docx", append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 600)...), "x.docx", detect.DOCX, 0, domain.KindUnprocessable, "OLE container"},
		{"zip bomb", zipBombDOCX(), "bomb.docx", "", 0, domain.KindUnprocessable, "zip bomb"},
		{"truncated pdf", readFixture(t, "truncated.pdf"), "t.pdf", "", 0, domain.KindUnprocessable, "corrupt PDF"},
		{"cyclic page tree", readFixture(t, "cyclic-pages.pdf"), "c.pdf", "", 0, domain.KindUnprocessable, "corrupt PDF: page tree too deep or cyclic"},
		{"unterminated hex string", readFixture(t, "unterminated-hex.pdf"), "h.pdf", "", 0, domain.KindUnprocessable, "corrupt PDF: page 2: content stream ends inside a hex string"},
		{"pdf 2.0", []byte("%PDF-2.0\n%%EOF\n"), "c.pdf", "", 0, domain.KindUnprocessable, "unsupported PDF version 2.0"},
		{"encrypted pdf", readFixture(t, "encrypted.pdf"), "e.pdf", "", 0, domain.KindUnprocessable, "encrypted PDF"},
		{"text as pdf", []byte("hello world"), "x.pdf", "application/pdf", 0, domain.KindUnprocessable, "corrupt PDF: no %PDF- header"},
		{"bad json", []byte(`{"a": [1, 2`), "x.json", "", 0, domain.KindUnprocessable, "corrupt JSON: unexpected end of data"},
		{"json syntax", []byte(`{"a": nope}`), "x.json", "application/json", 0, domain.KindUnprocessable, "corrupt JSON: invalid character"},
		{"json trailing", []byte("{} {}"), "x.json", "application/json", 0, domain.KindUnprocessable, "extra data"},
		{"bad jsonl", []byte("{\"a\":1}\n{oops\n"), "x.jsonl", "", 0, domain.KindUnprocessable, "corrupt JSON lines: line 2"},
		{"too large", bytes.Repeat([]byte("a"), 101), "a.txt", "", 100, domain.KindTooLarge, "larger than the limit of 100 bytes"},
		{"unknown given type", []byte("x"), "x", "application/x-unknown-thing", 0, domain.KindUnprocessable, "unsupported file type application/x-unknown-thing"},
		{"video", []byte("x"), "x.mp4", "video/mp4", 0, domain.KindUnprocessable, "unsupported file type video/mp4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract(context.Background(), bytes.NewReader(tt.data), tt.file, tt.mime, tt.max)
			if err == nil {
				t.Fatal("want an error")
			}
			de, ok := domain.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a *domain.Error", err, err)
			}
			if de.Kind != tt.kind {
				t.Errorf("kind = %s, want %s (%v)", de.Kind, tt.kind, err)
			}
			if !strings.Contains(de.Message, tt.contains) {
				t.Errorf("message %q does not contain %q", de.Message, tt.contains)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestExtractReaderAndContext(t *testing.T) {
	_, err := Extract(context.Background(), errReader{}, "a.txt", "", 0)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Extract(ctx, strings.NewReader("x"), "a.txt", "", 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestRegistry(t *testing.T) {
	noop := ParserFunc(func(context.Context, []byte, string) (ingest.Document, error) { return ingest.Document{}, nil })
	for _, bad := range []string{"Text/Plain", "text/plain; charset=utf-8", "textplain", "", "text/x-markdown"} {
		if _, err := NewRegistry(map[string]Parser{bad: noop}); err == nil {
			t.Errorf("NewRegistry(%q) succeeded", bad)
		}
	}
	if _, err := NewRegistry(map[string]Parser{"text/plain": nil}); err == nil {
		t.Error("nil parser accepted")
	}
	r := NewDefaultRegistry()
	for _, typ := range []string{"text/plain", "text/markdown", "text/html", "application/pdf", detect.DOCX, "text/csv", "application/json", "application/x-ndjson", "text/x-go", "application/yaml"} {
		if !r.Supports(typ) {
			t.Errorf("default registry lacks %s", typ)
		}
	}
	// a parser that panics is contained
	boom := ParserFunc(func(context.Context, []byte, string) (ingest.Document, error) { panic("boom") })
	r, err := NewRegistry(map[string]Parser{"text/plain": boom})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Extract(context.Background(), strings.NewReader("x"), "a.txt", "text/plain", 0)
	if domain.KindOf(err) != domain.KindUnprocessable || !strings.Contains(err.Error(), "parser failed") {
		t.Fatalf("err = %v", err)
	}
}

func TestExtractMarkdownInline(t *testing.T) {
	tests := map[string]string{
		"**bold** and __strong__ and *em* and _em_":                 "bold and strong and em and em",
		"snake_case_name and 2 * 3 * 4":                             "snake_case_name and 2 * 3 * 4",
		"`code *not em*` and ``a ` b``":                             "code *not em* and a ` b",
		"[link **text**](http://x.y/z \"t\") end":                   "link text end",
		"![alt text](a.png) [ref link][r] [plain]\n\n[r]: http://x": "alt text ref link [plain]",
		"[undefined ref][nope] &amp; &#x263A; &copy;":               "[undefined ref][nope] & \u263a \u00a9",
		"hard  \nbreak\\\nand soft\nbreak":                          "hard\nbreak\nand soft break",
		"<https://a.b/c> <me@example.com> <span>x</span>":           "https://a.b/c me@example.com x",
		`escaped \*stars\* and \_under\_`:                           "escaped *stars* and _under_",
		"~~gone~~ stays":                                            "gone stays",
		"x <!-- comment --> y":                                      "x  y",
	}
	for in, want := range tests {
		doc, err := parseMarkdown(context.Background(), []byte(in), "i.md")
		if err != nil {
			t.Fatal(err)
		}
		if doc.Text != want {
			t.Errorf("parseMarkdown(%q) = %q, want %q", in, doc.Text, want)
		}
	}
}

func TestExtractMarkdownStructure(t *testing.T) {
	md := "Title\n=====\n\nText under title.\n\n### Deep\n\n~~~\nunclosed fence\n\n# Next\n"
	doc, err := Extract(context.Background(), strings.NewReader(md), "a.md", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []wantBlock{
		{ingest.BlockHeading, 1, "Title", "Title"},
		{ingest.BlockParagraph, 0, "Title", "Text under title."},
		{ingest.BlockHeading, 3, "Title > Deep", "Deep"},
		{ingest.BlockCode, 0, "Title > Deep", "unclosed fence\n\n# Next"},
	}
	if got := blocksOf(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}

func TestExtractHTMLCharsetAndNoise(t *testing.T) {
	page := "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><title>t</title></head>" +
		"<body><div style=\"display: none\">hidden</div><div role=\"navigation\">menu</div><noscript>js</noscript>" +
		"<p>Smart \x93quotes\x94 &mdash; &#8364;5</p><h7>not a heading</h7></body></html>"
	doc, err := Extract(context.Background(), strings.NewReader(page), "p.html", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "Smart \u201cquotes\u201d \u2014 \u20ac5\n\nnot a heading" {
		t.Errorf("text = %q", doc.Text)
	}
}

func TestExtractUTF16(t *testing.T) {
	// "hi é" in UTF-16 LE with a BOM
	data := []byte{0xFF, 0xFE, 'h', 0, 'i', 0, ' ', 0, 0xE9, 0}
	doc, err := Extract(context.Background(), bytes.NewReader(data), "u.txt", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "hi é" {
		t.Errorf("text = %q", doc.Text)
	}
}

func TestExtractEmpty(t *testing.T) {
	for _, name := range []string{"e.txt", "e.md", "e.html", "e.csv", "e.go"} {
		doc, err := Extract(context.Background(), strings.NewReader(""), name, "", 0)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if doc.Text != "" || len(doc.Blocks) != 0 {
			t.Errorf("%s: %q %v", name, doc.Text, doc.Blocks)
		}
	}
}

// highBytes is random bytes without control characters, mostly above 0x7F:
// binary junk that has no control bytes to give it away.
func highBytes() []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(0x20 + rng.UintN(0xE0))
	}
	return b
}

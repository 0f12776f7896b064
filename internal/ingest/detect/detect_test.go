package detect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalizeMIME(t *testing.T) {
	tests := map[string]string{
		"":                                "",
		"Text/HTML; charset=ISO-8859-1":   "text/html",
		" application/x-pdf ":             "application/pdf",
		"text/x-markdown":                 "text/markdown",
		"application/jsonl":               "application/x-ndjson",
		"application/x-javascript":        "text/javascript",
		"application/csv; header=present": "text/csv",
		"text/xml":                        "application/xml",
		"image/PNG":                       "image/png",
		"application/vnd.ms-word.document.macroEnabled.12": DOCX,
	}
	for in, want := range tests {
		if got := NormalizeMIME(in); got != want {
			t.Errorf("NormalizeMIME(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		name string
		head string
		want string
	}{
		{"", "%PDF-1.7\n...", "application/pdf"},
		{"x.bin", "%PDF-1.4", "application/pdf"},
		{"", string(readFixture(t, "sample.docx")), DOCX},
		{"report.docx", "PK\x03\x04 first entry only", DOCX},
		{"", string(readFixture(t, "notdocx.zip")), "application/zip"},
		{"notes.txt", string(readFixture(t, "image.png")), "image/png"},
		{"", string(readFixture(t, "random.bin")), "application/octet-stream"},
		{"", "\x00\x01\x02binary", "application/octet-stream"},
		{"", "", "text/plain"},
		{"", `{"a": [1, 2, {"b": "c"`, "application/json"},
		{"", "[1, 2, 3]", "application/json"},
		{"", "{not json at all", "text/plain"},
		{"", "{\"a\":1}\n{\"a\":2}\n{\"a\":", "application/x-ndjson"},
		{"", "# Title\n\nSome *text* with `code`.\n", "text/markdown"},
		{"", "name,age,city\nAda,36,London\nAlan,41,Wilmslow\n", "text/csv"},
		{"", "Just a plain sentence.\nAnd another, with a comma.\n", "text/plain"},
		{"", "<!DOCTYPE html><html><body><p>x</p></body></html>", "text/html"},
		{"", "<?xml version=\"1.0\"?><a/>", "application/xml"},
		{"main.go", "package main\n", "text/x-go"},
		{"dir/script.PY", "print(1)\n", "text/x-python"},
		{"a.ts", "let x = 1\n", "text/x-typescript"},
		{"a.rs", "fn main() {}\n", "text/x-rust"},
		{"a.rb", "puts 1\n", "text/x-ruby"},
		{"a.sh", "#!/bin/sh\necho hi\n", "text/x-shellscript"},
		{"q.sql", "select 1;\n", "application/sql"},
		{"c.yaml", "a: 1\n", "application/yaml"},
		{"c.toml", "a = 1\n", "application/toml"},
		{"Makefile", "all:\n\tgo build\n", "text/x-makefile"},
		{"README.md", "plain words", "text/markdown"},
		{"data.csv", "single column\n", "text/csv"},
		{"page.htm", "hello", "text/html"},
		{"a.jsonl", "{}\n", "application/x-ndjson"},
		{"C:\\docs\\x.JSON", "{}", "application/json"},
		{"u16.txt", "\xff\xfeh\x00i\x00", "text/plain"},
		{"", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "application/gzip"},
		{"blob.bin", "\x7fELF\x02\x01\x01\x00" + strings.Repeat("\x00", 56), "application/x-elf"},
		{"", "SQLite format 3\x00" + strings.Repeat("\x00", 84), "application/vnd.sqlite3"},
		{"notes.txt", "Caf\xe9 cr\xe8me\n", "text/plain"},
		{"", "One NUL\x00 in a line of text is not enough to make it binary.\n", "text/plain"},
		{"blob.bin", string(readFixture(t, "random.bin")), "application/octet-stream"},
		{"report.pdf", string(readFixture(t, "random.bin")), "application/pdf"}, // the parser then says it is corrupt
	}
	for _, tt := range tests {
		if got := Sniff(tt.name, []byte(tt.head)); got != tt.want {
			t.Errorf("Sniff(%q, %.20q) = %q, want %q", tt.name, tt.head, got, tt.want)
		}
	}
}

func TestResolveType(t *testing.T) {
	tests := []struct{ name, given, head, want string }{
		{"a.md", "text/plain", "# x", "text/markdown"},
		{"a.csv", "text/plain; charset=utf-8", "a,b", "text/csv"},
		{"a.txt", "text/plain", "# x", "text/plain"},
		{"a.png", "text/plain", "x", "text/plain"}, // the client said text; an image extension does not override it
		{"a.pdf", "application/octet-stream", "%PDF-1.4", "application/pdf"},
		{"a", "", "{\"k\": 1}", "application/json"},
		{"a.html", "TEXT/HTML", "<p>", "text/html"},
		{"a.bin", "image/jpg", "x", "image/jpeg"},
	}
	for _, tt := range tests {
		if got := ResolveType(tt.name, tt.given, []byte(tt.head)); got != tt.want {
			t.Errorf("ResolveType(%q, %q) = %q, want %q", tt.name, tt.given, got, tt.want)
		}
	}
}

// readFixture reads a file of the parsers' test data, which the parse
// package's tests generate and keep current.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "parse", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

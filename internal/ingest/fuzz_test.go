package ingest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"capsuled/internal/domain"
)

// fuzzExtract runs one parser on arbitrary bytes: it must not panic (the
// registry's recover would hide a panic, so the parser is called directly),
// must either succeed with a well-formed document or fail with a
// *domain.Error, and what it yields must chunk within budget.
func fuzzExtract(f *testing.F, mime string, parse ParserFunc, seeds ...string) {
	for _, s := range seeds {
		f.Add(readFixture(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parse(context.Background(), data, "fuzz")
		if err != nil {
			if _, ok := domain.AsError(err); !ok && !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: error %v (%T) is not a *domain.Error", mime, err, err)
			}
			return
		}
		checkDocInvariants(t, doc)
		opts := ChunkOptions{MaxTokens: 32, HeadingContext: true}
		tc := fakeWordPieceCounter{}
		checkChunks(t, doc, tc, opts, ChunkDocument(doc, tc, opts))
	})
}

func FuzzExtractPDF(f *testing.F) {
	f.Add([]byte("%PDF-1.4\n%%EOF\n"))
	fuzzExtract(f, "application/pdf", parsePDF, "sample.pdf", "truncated.pdf", "encrypted.pdf")
}

func FuzzExtractDOCX(f *testing.F) {
	fuzzExtract(f, mimeDOCX, parseDOCX, "sample.docx", "notdocx.zip")
}

func FuzzExtractHTML(f *testing.F) {
	fuzzExtract(f, "text/html", parseHTML, "sample.html", "latin1.html")
}

func FuzzExtractMarkdown(f *testing.F) {
	f.Add([]byte("# a\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n- [l](u)\n\n```\ncode"))
	fuzzExtract(f, "text/markdown", parseMarkdown, "sample.md", "sample.txt")
}

func FuzzExtractCSV(f *testing.F) {
	fuzzExtract(f, "text/csv", parseCSV, "sample.csv", "sample.tsv")
}

func FuzzExtractJSON(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":null}]},"d":"e"}`))
	fuzzExtract(f, "application/json", parseJSON, "sample.json")
}

func FuzzExtractNDJSON(f *testing.F) {
	fuzzExtract(f, "application/x-ndjson", parseNDJSON, "sample.jsonl")
}

func FuzzExtractText(f *testing.F) {
	fuzzExtract(f, "text/plain", parsePlain, "sample.txt", "invalid-utf8.txt", "latin1.txt")
}

func FuzzExtractCode(f *testing.F) {
	fuzzExtract(f, "text/x-go", parseCode, "sample.go", "sample.py")
}

// FuzzChunk chunks Markdown and plain text under random options with both
// an additive and a non-additive counter.
func FuzzChunk(f *testing.F) {
	for _, s := range []string{"sample.md", "sample.txt", "sample.go"} {
		f.Add(readFixture(f, s), uint8(40), uint8(8), true, false)
	}
	f.Add([]byte("a b c d e f g h i j k l m n o p"), uint8(3), uint8(1), false, true)
	f.Fuzz(func(t *testing.T, data []byte, maxTok, overlap uint8, headings, bytesCounter bool) {
		doc, err := parseMarkdown(context.Background(), data, "f.md")
		if err != nil {
			t.Fatal(err)
		}
		var tc TokenCounter = fakeWordPieceCounter{}
		if bytesCounter {
			tc = fakeByteCounter{}
		}
		opts := ChunkOptions{MaxTokens: int(maxTok) + 4, OverlapTokens: int(overlap) - 8, HeadingContext: headings}
		checkChunks(t, doc, tc, opts, ChunkDocument(doc, tc, opts))
		plain := Document{Text: decodeText(data)}
		checkChunks(t, plain, tc, opts, ChunkDocument(plain, tc, opts))
	})
}

// FuzzSniff: Sniff and ResolveType never panic, always name a type, and
// Extract never panics on what they pick.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{"sample.pdf", "sample.docx", "image.png", "sample.json", "sample.jsonl", "sample.csv", "sample.md", "sample.html", "random.bin"} {
		f.Add(s, readFixture(f, s))
	}
	f.Add("", []byte("{\"a\":1}\n{\"b\":2}\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		typ := Sniff(name, data)
		if typ == "" || NormalizeMIME(typ) != typ {
			t.Fatalf("Sniff(%q) = %q", name, typ)
		}
		doc, err := Extract(context.Background(), bytes.NewReader(data), name, "", 0)
		if err != nil {
			if _, ok := domain.AsError(err); !ok {
				t.Fatalf("error %v is not a *domain.Error", err)
			}
			return
		}
		checkDocInvariants(t, doc)
	})
}

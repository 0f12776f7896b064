package parse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"
	"unicode/utf8"

	"capsuled/internal/domain"
	"capsuled/internal/ingest"
	"capsuled/internal/ingest/detect"
)

// fuzzExtract runs one parser on arbitrary bytes: it must not panic (the
// registry's recover would hide a panic, so the parser is called directly),
// and must either succeed with a well-formed document or fail with a
// *domain.Error. (FuzzChunk in package chunk chunks what the parsers yield.)
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
	})
}

func FuzzExtractPDF(f *testing.F) {
	f.Add([]byte("%PDF-1.4\n%%EOF\n"))
	fuzzExtract(f, "application/pdf", parsePDF, "sample.pdf", "truncated.pdf", "encrypted.pdf")
}

func FuzzExtractDOCX(f *testing.F) {
	fuzzExtract(f, detect.DOCX, parseDOCX, "sample.docx", "notdocx.zip")
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

// FuzzSniff: Sniff and ResolveType never panic, always name a type, and
// Extract never panics on what they pick.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{"sample.pdf", "sample.docx", "image.png", "sample.json", "sample.jsonl", "sample.csv", "sample.md", "sample.html", "random.bin"} {
		f.Add(s, readFixture(f, s))
	}
	f.Add("", []byte("{\"a\":1}\n{\"b\":2}\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		typ := detect.Sniff(name, data)
		if typ == "" || detect.NormalizeMIME(typ) != typ {
			t.Fatalf("detect.Sniff(%q) = %q", name, typ)
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

// fuzzMetadata runs one metadata reader on arbitrary bytes (directly, not
// behind ReadMetadata's recover): it must not panic, and what ReadMetadata
// keeps of it must be valid UTF-8 within the bounds and marshal to JSON.
func fuzzMetadata(f *testing.F, mime string, read func(context.Context, io.ReaderAt, int64) (ingest.Metadata, error), seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := read(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		m = m.Clean(metaMaxText, metaMaxKeywords, metaMaxKeyword)
		for _, s := range append([]string{m.Title, m.Author, m.Description}, m.Keywords...) {
			if !utf8.ValidString(s) || len(s) > metaMaxText {
				t.Fatalf("%s: bad text %q", mime, s)
			}
		}
		if _, err := json.Marshal(m.Fields()); err != nil {
			t.Fatalf("%s: fields do not marshal: %v", mime, err)
		}
	})
}

func FuzzMetadataMarkdown(f *testing.F) {
	fuzzMetadata(f, "text/markdown", markdownMetadata,
		[]byte("---\ntitle: T\nauthors: [a, {name: b}]\ndate: 2023-05-17\ntags: x, y\n---\nbody"),
		[]byte("---\na: &x [*x]\n---\n"))
}

func FuzzMetadataHTML(f *testing.F) {
	fuzzMetadata(f, "text/html", htmlMetadata,
		[]byte(`<html><head><title>T</title><meta name="author" content="A"><meta property="article:published_time" content="2022-11-05"></head></html>`))
}

func FuzzMetadataPDF(f *testing.F) {
	fuzzMetadata(f, "application/pdf", pdfMetadata,
		buildPDFInfo([][]string{{"x"}}, `/Title (T) /Author <FEFF0041> /CreationDate (D:20240301120000+01'00')`))
}

func FuzzMetadataDOCX(f *testing.F) {
	fuzzMetadata(f, detect.DOCX, docxMetadata, docxWithCore(coreXML))
}

// FuzzParseDate: the date readers never panic and keep years in 1–9999.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2024-05-01T10:20:30Z", "May 1, 2024", "D:20240301120000+01'00'", "D:99999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (time.Time, bool){ParseDate, ParsePDFDate} {
			if d, ok := parse(s); ok && (d.Year() < 1 || d.Year() > 9999) {
				t.Fatalf("%q: year %d", s, d.Year())
			}
		}
	})
}

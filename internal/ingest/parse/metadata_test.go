package parse

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"capsuled/internal/ingest"
	"capsuled/internal/ingest/detect"
)

func readMeta(t *testing.T, data []byte, mime string) ingest.Metadata {
	t.Helper()
	m, err := ReadMetadata(context.Background(), bytes.NewReader(data), int64(len(data)), mime)
	if err != nil {
		t.Fatalf("ReadMetadata(%s): %v", mime, err)
	}
	return m
}

// docxWithCore is buildDOCX's document with docProps/core.xml.
func docxWithCore(core string) []byte {
	doc := `<?xml version="1.0" encoding="UTF-8"?><w:document ` + docxNS + `><w:body>` + docxPara("", "Body text.") + `</w:body></w:document>`
	files := map[string]string{"word/document.xml": doc, "docProps/core.xml": core}
	return zipOf(files, []string{"word/document.xml", "docProps/core.xml"})
}

const coreXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"
  xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"
  xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <dc:title>Leave Policy</dc:title>
  <dc:subject>HR</dc:subject>
  <dc:creator>Ada Lovelace</dc:creator>
  <cp:keywords>leave; holidays, policy</cp:keywords>
  <dc:description>How paid leave works.</dc:description>
  <cp:lastModifiedBy>Someone Else</cp:lastModifiedBy>
  <dcterms:created xsi:type="dcterms:W3CDTF">2021-03-04T05:06:07Z</dcterms:created>
  <dcterms:modified xsi:type="dcterms:W3CDTF">2024-01-01T00:00:00Z</dcterms:modified>
</cp:coreProperties>`

func TestReadMetadata(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		mime string
		want ingest.Metadata
	}{
		{"markdown front matter", []byte("---\ntitle: The  Handbook\nauthors:\n  - Ada Lovelace\n  - name: Alan Turing\ndate: 2023-05-17\ntags: [policy, leave, policy]\ndescription: >\n  What the company\n  expects.\n---\n# Body\n"),
			"text/markdown", ingest.Metadata{Title: "The Handbook", Author: "Ada Lovelace, Alan Turing", Description: "What the company expects.",
				Keywords: []string{"policy", "leave"}, Date: time.Date(2023, 5, 17, 0, 0, 0, 0, time.UTC)}},
		{"markdown string date and keywords", []byte("---\nTitle: Notes\nAuthor: Grace Hopper\nDate: \"2020-02-03T10:00:00+02:00\"\nkeywords: a, b\n...\ntext\n"),
			"text/markdown", ingest.Metadata{Title: "Notes", Author: "Grace Hopper", Keywords: []string{"a", "b"},
				Date: time.Date(2020, 2, 3, 10, 0, 0, 0, time.FixedZone("", 2*3600))}},
		{"markdown without front matter", []byte("# Title\n\n---\n\ntext\n"), "text/markdown", ingest.Metadata{}},
		{"html head", []byte(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Caf&eacute; Guide</title>
<meta name="Author" content="Ada Lovelace"><meta name="description" content="Where to drink coffee.">
<meta name="keywords" content="coffee, cafés , ">
<meta property="article:published_time" content="2022-11-05T08:00:00Z"><meta name="date" content="1999-01-01">
</head><body><title>not this</title><p>x</p></body></html>`),
			"text/html", ingest.Metadata{Title: "Café Guide", Author: "Ada Lovelace", Description: "Where to drink coffee.",
				Keywords: []string{"coffee", "cafés"}, Date: time.Date(2022, 11, 5, 8, 0, 0, 0, time.UTC)}},
		{"html og fallbacks and dc date", []byte(`<html><head><meta property="og:title" content="OG title"><meta property="og:description" content="OG desc"><meta name="DC.date" content="2010-07"></head><body></body></html>`),
			"text/html", ingest.Metadata{Title: "OG title", Description: "OG desc", Date: time.Date(2010, 7, 1, 0, 0, 0, 0, time.UTC)}},
		{"pdf info", buildPDFInfo([][]string{{"Page one."}}, `/Title (Annual Report) /Author (Grace Hopper) /Subject (Numbers of the year) /Keywords (finance; 2024, report) /CreationDate (D:20240301120000+01'00')`),
			"application/pdf", ingest.Metadata{Title: "Annual Report", Author: "Grace Hopper", Description: "Numbers of the year",
				Keywords: []string{"finance", "2024", "report"}, Date: time.Date(2024, 3, 1, 12, 0, 0, 0, time.FixedZone("", 3600))}},
		{"pdf utf-16 title", buildPDFInfo([][]string{{"x"}}, "/Title <FEFF00430061006600E9>"),
			"application/pdf", ingest.Metadata{Title: "Café"}},
		{"pdf without info", readFixture(t, "sample.pdf"), "application/pdf", ingest.Metadata{}},
		{"docx core properties", docxWithCore(coreXML), detect.DOCX, ingest.Metadata{Title: "Leave Policy", Author: "Ada Lovelace",
			Description: "How paid leave works.", Keywords: []string{"leave", "holidays", "policy"}, Date: time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)}},
		{"docx subject as description", docxWithCore(strings.Replace(coreXML, "<dc:description>How paid leave works.</dc:description>", "", 1)), detect.DOCX,
			ingest.Metadata{Title: "Leave Policy", Author: "Ada Lovelace", Description: "HR", Keywords: []string{"leave", "holidays", "policy"},
				Date: time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)}},
		{"docx without core", readFixture(t, "sample.docx"), detect.DOCX, ingest.Metadata{}},
		{"plain text has none", []byte("---\ntitle: x\n---\n"), "text/plain", ingest.Metadata{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readMeta(t, tt.data, tt.mime)
			if !got.Date.Equal(tt.want.Date) {
				t.Errorf("date %v, want %v", got.Date, tt.want.Date)
			}
			got.Date, tt.want.Date = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadMetadataErrorsAndBounds(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		mime string
	}{
		{"bad yaml", []byte("---\ntitle: [unclosed\n---\n"), "text/markdown"},
		{"not a zip", []byte("hello"), detect.DOCX},
		{"not a pdf", []byte("hello"), "application/pdf"},
		{"core.xml bomb", docxWithCore("<cp:coreProperties>" + strings.Repeat("<x/>", metaCoreXML/4+1) + "</cp:coreProperties>"), detect.DOCX},
	} {
		if _, err := ReadMetadata(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)), tt.mime); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	long := strings.Repeat("é", metaMaxText)
	var kw strings.Builder
	for i := range 300 {
		kw.WriteString("k" + strings.Repeat("x", i) + ",")
	}
	m := readMeta(t, []byte("---\ntitle: "+long+"\nkeywords: "+kw.String()+"\n---\n"), "text/markdown")
	if len(m.Title) > metaMaxText || !utf8.ValidString(m.Title) || len(m.Keywords) != metaMaxKeywords {
		t.Errorf("title %d bytes, %d keywords", len(m.Title), len(m.Keywords))
	}
	for _, k := range m.Keywords {
		if len(k) > metaMaxKeyword {
			t.Errorf("keyword of %d bytes", len(k))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := []byte("---\ntitle: x\n---\n")
	if _, err := ReadMetadata(ctx, bytes.NewReader(data), int64(len(data)), "text/markdown"); err == nil {
		t.Error("cancelled context: no error")
	}
}

func TestParseDate(t *testing.T) {
	utc := func(y, mo, d, h, mi, s int) time.Time { return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC) }
	for in, want := range map[string]time.Time{
		"2024-05-01T10:20:30Z":          utc(2024, 5, 1, 10, 20, 30),
		"2024-05-01T10:20:30.5+00:00":   time.Date(2024, 5, 1, 10, 20, 30, 5e8, time.UTC),
		"2024-05-01T10:20:30":           utc(2024, 5, 1, 10, 20, 30),
		"2024-05-01 10:20":              utc(2024, 5, 1, 10, 20, 0),
		" 2024-05-01 ":                  utc(2024, 5, 1, 0, 0, 0),
		"2024/05/01":                    utc(2024, 5, 1, 0, 0, 0),
		"2024-05":                       utc(2024, 5, 1, 0, 0, 0),
		"2024":                          utc(2024, 1, 1, 0, 0, 0),
		"Wed, 01 May 2024 10:20:30 GMT": utc(2024, 5, 1, 10, 20, 30),
		"May 1, 2024":                   utc(2024, 5, 1, 0, 0, 0),
		"1 May 2024":                    utc(2024, 5, 1, 0, 0, 0),
	} {
		got, ok := ParseDate(in)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseDate(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2024-13-01", "0000-01-01", "31/12/2024"} {
		if got, ok := ParseDate(bad); ok {
			t.Errorf("ParseDate(%q) = %v", bad, got)
		}
	}
	for in, want := range map[string]time.Time{
		"D:20240301120000+01'00'": time.Date(2024, 3, 1, 12, 0, 0, 0, time.FixedZone("", 3600)),
		"D:20240301120000-05'30":  time.Date(2024, 3, 1, 12, 0, 0, 0, time.FixedZone("", -(5*3600+30*60))),
		"D:20240301120000Z":       utc(2024, 3, 1, 12, 0, 0),
		"D:2024":                  utc(2024, 1, 1, 0, 0, 0),
		"20240301":                utc(2024, 3, 1, 0, 0, 0),
	} {
		got, ok := ParsePDFDate(in)
		if !ok || !got.Equal(want) {
			t.Errorf("ParsePDFDate(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "D:", "D:20241301", "D:2024013200", "yesterday"} {
		if got, ok := ParsePDFDate(bad); ok {
			t.Errorf("ParsePDFDate(%q) = %v", bad, got)
		}
	}
}

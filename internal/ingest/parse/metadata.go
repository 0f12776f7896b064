package parse

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"capsuled/internal/ingest"
	"capsuled/internal/ingest/detect"
	"github.com/ledongthuc/pdf"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Bounds on what ReadMetadata reads and keeps.
const (
	metaHeadBytes   = 256 << 10 // of a Markdown or HTML file
	metaCoreXML     = 1 << 20   // decompressed docProps/core.xml
	metaMaxText     = 1000      // bytes of a title, author or description
	metaMaxKeywords = 100
	metaMaxKeyword  = 200 // bytes of one keyword
)

// ReadMetadata returns what a file of the (detected) type mimeType says
// about itself, using the built-in parsers. See Registry.ReadMetadata.
func ReadMetadata(ctx context.Context, r io.ReaderAt, size int64, mimeType string) (ingest.Metadata, error) {
	return defaultRegistry.ReadMetadata(ctx, r, size, mimeType)
}

// ReadMetadata returns what a file of the (detected) type mimeType says
// about itself, when its parser is also a MetadataReader: for the built-in
// ones Markdown front matter, an HTML head's title and meta elements, a
// PDF's document information dictionary, a DOCX file's core properties.
// Other types give a zero Metadata. The result is bounded in size (see
// ingest.Metadata.Clean). An error means the part that holds the metadata
// is unreadable; the file's text may still be. Panics are recovered.
func (reg *Registry) ReadMetadata(ctx context.Context, r io.ReaderAt, size int64, mimeType string) (meta ingest.Metadata, err error) {
	read, ok := reg.parsers[detect.NormalizeMIME(mimeType)].(MetadataReader)
	if !ok {
		return ingest.Metadata{}, nil
	}
	defer func() {
		if v := recover(); v != nil {
			meta, err = ingest.Metadata{}, fmt.Errorf("metadata: malformed file: %v", v)
		}
	}()
	if err := ctx.Err(); err != nil {
		return ingest.Metadata{}, err
	}
	meta, err = read.ReadMetadata(ctx, r, size)
	if err != nil {
		return ingest.Metadata{}, err
	}
	return meta.Clean(metaMaxText, metaMaxKeywords, metaMaxKeyword), nil
}

// readHead reads at most n bytes from the start of r.
func readHead(r io.ReaderAt, size int64, n int64) ([]byte, error) {
	buf := make([]byte, min(size, n))
	k, err := r.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return buf[:k], nil
}

// markdownMetadata reads YAML front matter: title; author or authors (a
// string, a list of strings, or a list of maps with a name); date, created,
// published or pubdate; description, summary or abstract; keywords or tags
// (a list or a comma-separated string). Keys are matched without regard to
// case.
func markdownMetadata(_ context.Context, r io.ReaderAt, size int64) (ingest.Metadata, error) {
	head, err := readHead(r, size, metaHeadBytes)
	if err != nil {
		return ingest.Metadata{}, err
	}
	_, front := splitFrontMatter(decodeText(head))
	if strings.TrimSpace(front) == "" {
		return ingest.Metadata{}, nil
	}
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		return ingest.Metadata{}, fmt.Errorf("front matter: %w", err)
	}
	get := func(keys ...string) any {
		for _, k := range keys {
			for fk, v := range fm {
				if strings.EqualFold(fk, k) && v != nil {
					return v
				}
			}
		}
		return nil
	}
	var m ingest.Metadata
	m.Title = yamlText(get("title"))
	m.Author = strings.Join(yamlList(get("author", "authors")), ", ")
	m.Description = yamlText(get("description", "summary", "abstract"))
	m.Keywords = yamlList(get("keywords", "tags"))
	switch d := get("date", "created", "published", "pubdate").(type) {
	case time.Time:
		m.Date = d
	case string:
		m.Date, _ = ParseDate(d)
	}
	return m, nil
}

// yamlText is a scalar front matter value as text.
func yamlText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int, int64, float64, bool:
		return fmt.Sprint(v)
	case time.Time:
		return v.Format(time.RFC3339)
	}
	return ""
}

// yamlList is a list of names: a comma-separated string, or a list of
// scalars or of maps with a name.
func yamlList(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = strings.Split(v, ",")
	case []any:
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				e = m["name"]
			}
			if s := yamlText(e); s != "" {
				out = append(out, s)
			}
		}
	default:
		if s := yamlText(v); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// htmlDateNames are the meta names and properties that carry a page's
// publication date, most specific first.
var htmlDateNames = []string{
	"article:published_time", "citation_publication_date", "citation_date", "dcterms.created",
	"dc.date.created", "dcterms.date", "dc.date", "date", "pubdate", "publish_date", "publish-date",
	"og:published_time", "datepublished", "dcterms.issued", "dc.date.issued",
}

// htmlMetadata reads the head of an HTML page: <title> (or og:title), and
// <meta> elements by name, property or itemprop: author, description (or
// og:description), keywords, and the date names of htmlDateNames. It stops
// at <body> or </head>.
func htmlMetadata(_ context.Context, r io.ReaderAt, size int64) (ingest.Metadata, error) {
	head, err := readHead(r, size, metaHeadBytes)
	if err != nil {
		return ingest.Metadata{}, err
	}
	z := html.NewTokenizer(strings.NewReader(decodeHTML(head)))
	metas := map[string]string{}
	var title strings.Builder
	inTitle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return htmlMeta(title.String(), metas), nil
		case html.TextToken:
			if inTitle {
				title.Write(z.Text())
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch atom.Lookup(name) {
			case atom.Title:
				inTitle = false
			case atom.Head:
				return htmlMeta(title.String(), metas), nil
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Body:
				return htmlMeta(title.String(), metas), nil
			case atom.Title:
				inTitle = tt == html.StartTagToken && title.Len() == 0
			case atom.Meta:
				var key, content string
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					switch string(k) {
					case "name", "property", "itemprop":
						if key == "" {
							key = strings.ToLower(strings.TrimSpace(string(v)))
						}
					case "content":
						content = string(v)
					}
				}
				if _, seen := metas[key]; key != "" && !seen && strings.TrimSpace(content) != "" {
					metas[key] = content
				}
			}
		}
	}
}

func htmlMeta(title string, metas map[string]string) ingest.Metadata {
	m := ingest.Metadata{Title: title, Author: metas["author"], Description: metas["description"]}
	if strings.TrimSpace(m.Title) == "" {
		m.Title = metas["og:title"]
	}
	if m.Description == "" {
		m.Description = metas["og:description"]
	}
	if k := metas["keywords"]; k != "" {
		m.Keywords = strings.Split(k, ",")
	}
	for _, name := range htmlDateNames {
		if d, ok := ParseDate(metas[name]); ok {
			m.Date = d
			break
		}
	}
	return m
}

// pdfMetadata reads the document information dictionary: Title, Author,
// Subject (the description), Keywords (split on commas and semicolons) and
// CreationDate.
func pdfMetadata(_ context.Context, r io.ReaderAt, size int64) (m ingest.Metadata, err error) {
	defer func() { // the library panics on some malformed objects
		if v := recover(); v != nil {
			m, err = ingest.Metadata{}, fmt.Errorf("malformed PDF: %v", v)
		}
	}()
	rd, err := openPDF(r, size)
	if err != nil {
		return ingest.Metadata{}, err
	}
	info := rd.Trailer().Key("Info")
	if info.Kind() != pdf.Dict {
		return ingest.Metadata{}, nil
	}
	m = ingest.Metadata{
		Title:       info.Key("Title").Text(),
		Author:      info.Key("Author").Text(),
		Description: info.Key("Subject").Text(),
		Keywords:    splitKeywords(info.Key("Keywords").Text()),
	}
	m.Date, _ = ParsePDFDate(info.Key("CreationDate").Text())
	return m, nil
}

// docxMetadata reads docProps/core.xml: dc:title, dc:creator,
// dc:description (or dc:subject), cp:keywords (split on commas and
// semicolons) and dcterms:created.
func docxMetadata(_ context.Context, r io.ReaderAt, size int64) (ingest.Metadata, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return ingest.Metadata{}, err
	}
	if len(zr.File) > maxDOCXEntries {
		return ingest.Metadata{}, fmt.Errorf("%d zip entries (more than %d)", len(zr.File), maxDOCXEntries)
	}
	for _, f := range zr.File {
		if f.Name != "docProps/core.xml" {
			continue
		}
		raw, err := readZipFile(f, metaCoreXML)
		if err != nil {
			return ingest.Metadata{}, err
		}
		var core struct {
			Title       string `xml:"http://purl.org/dc/elements/1.1/ title"`
			Creator     string `xml:"http://purl.org/dc/elements/1.1/ creator"`
			Subject     string `xml:"http://purl.org/dc/elements/1.1/ subject"`
			Description string `xml:"http://purl.org/dc/elements/1.1/ description"`
			Keywords    string `xml:"http://schemas.openxmlformats.org/package/2006/metadata/core-properties keywords"`
			Created     string `xml:"http://purl.org/dc/terms/ created"`
		}
		d := xml.NewDecoder(bytes.NewReader(raw))
		d.Strict = false
		if err := d.Decode(&core); err != nil {
			return ingest.Metadata{}, fmt.Errorf("docProps/core.xml: %w", err)
		}
		m := ingest.Metadata{Title: core.Title, Author: core.Creator, Description: core.Description, Keywords: splitKeywords(core.Keywords)}
		if strings.TrimSpace(m.Description) == "" {
			m.Description = core.Subject
		}
		m.Date, _ = ParseDate(core.Created)
		return m, nil
	}
	return ingest.Metadata{}, nil
}

// splitKeywords splits a keyword list on commas and semicolons.
func splitKeywords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' })
}

// dateLayouts are the date forms ParseDate reads, after RFC 3339.
var dateLayouts = []string{
	"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02", "2006/01/02", "2006-01", "2006",
	time.RFC1123Z, time.RFC1123, time.RFC822Z, time.RFC822, "January 2, 2006", "Jan 2, 2006", "2 January 2006",
}

// ParseDate reads a date as documents write it: RFC 3339 and ISO 8601
// forms (with or without a time or zone; UTC when no zone), year-month,
// year, RFC 1123/822 and "January 2, 2006". Years outside 1–9999 are
// refused.
func ParseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return validDate(t)
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return validDate(t)
		}
	}
	return time.Time{}, false
}

var pdfDateRe = regexp.MustCompile(`^D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:([Zz+-])(\d{2})?'?(\d{2})?'?)?`)

// ParsePDFDate reads a PDF date, "D:YYYYMMDDHHmmSSOHH'mm'" with every part
// after the year optional (PDF 32000-1 7.9.4).
func ParsePDFDate(s string) (time.Time, bool) {
	m := pdfDateRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.Time{}, false
	}
	num := func(i, def int) int {
		if m[i] == "" {
			return def
		}
		n, _ := strconv.Atoi(m[i])
		return n
	}
	loc := time.UTC
	if m[7] == "+" || m[7] == "-" {
		off := num(8, 0)*3600 + num(9, 0)*60
		if m[7] == "-" {
			off = -off
		}
		loc = time.FixedZone("", off)
	}
	mon, day, h, mi, sec := num(2, 1), num(3, 1), num(4, 0), num(5, 0), num(6, 0)
	if mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	return validDate(time.Date(num(1, 0), time.Month(mon), day, h, mi, sec, 0, loc))
}

func validDate(t time.Time) (time.Time, bool) {
	if y, u := t.Year(), t.UTC().Year(); min(y, u) < 1 || max(y, u) > 9999 {
		return time.Time{}, false
	}
	return t, true
}

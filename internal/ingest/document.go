package ingest

import (
	"strings"
	"time"
	"unicode/utf8"
)

// BlockKind says what a Block is.
type BlockKind string

// The kinds of block.
const (
	BlockHeading   BlockKind = "heading"
	BlockParagraph BlockKind = "paragraph"
	BlockCode      BlockKind = "code"
	BlockList      BlockKind = "list"  // a whole list, one item a line
	BlockTable     BlockKind = "table" // a whole table, one row a line
	BlockRow       BlockKind = "row"   // one record of CSV or one top-level JSON element
	BlockPage      BlockKind = "page"  // one page of a PDF
)

// A Block is one structural element of a Document: the bytes
// Text[Start:End] of the document.
type Block struct {
	Kind  BlockKind
	Level int // heading level 1–6 for headings, else 0
	// Path is the titles of the headings this block sits under, outermost
	// first; a heading's own path ends with its own title. Blocks share path
	// slices: treat them as read-only.
	Path  []string
	Page  int // 1-based page number for PDF pages, else 0
	Start int // byte offset in Document.Text
	End   int // byte offset one past the block's end
}

// A Document is the clean text of a file and its structure.
type Document struct {
	MIMEType string  // the canonical type that was parsed
	Text     string  // clean UTF-8 text
	Blocks   []Block // ordered, non-overlapping ranges of Text
}

// ParagraphBlocks splits text into paragraph blocks at blank lines, each
// without its surrounding white space, under the heading path path.
func ParagraphBlocks(text string, path []string) []Block {
	var out []Block
	n := len(text)
	i := 0
	for i < n {
		// skip blank space
		for i < n && (text[i] == '\n' || text[i] == ' ' || text[i] == '\t') {
			i++
		}
		if i >= n {
			break
		}
		// the paragraph starts at its first non-space byte and ends before a blank line
		start := i
		end := n
		for j := i; j < n; j++ {
			if text[j] == '\n' {
				k := j + 1
				for k < n && (text[k] == ' ' || text[k] == '\t') {
					k++
				}
				if k >= n || text[k] == '\n' {
					end = j
					break
				}
			}
		}
		e := end
		for e > start && (text[e-1] == ' ' || text[e-1] == '\t' || text[e-1] == '\n') {
			e--
		}
		if strings.TrimSpace(text[start:e]) != "" { // Unicode spaces alone are no paragraph
			out = append(out, Block{Kind: BlockParagraph, Path: path, Start: start, End: e})
		}
		i = end
	}
	return out
}

// Metadata is what a file says about itself: Markdown front matter, an HTML
// head, a PDF's document information, a DOCX file's core properties.
type Metadata struct {
	Title       string
	Author      string // several authors joined by ", "
	Description string
	Keywords    []string
	Date        time.Time // when the document was written; zero when unknown
}

// Clean collapses white space in every text, drops empty and repeated
// keywords, and cuts texts to maxText bytes, keywords to maxKeyword bytes
// and their list to maxKeywords (on UTF-8 boundaries).
func (m Metadata) Clean(maxText, maxKeywords, maxKeyword int) Metadata {
	out := Metadata{
		Title:       clip(m.Title, maxText),
		Author:      clip(m.Author, maxText),
		Description: clip(m.Description, maxText),
		Date:        m.Date,
	}
	seen := map[string]bool{}
	for _, k := range m.Keywords {
		k = clip(k, maxKeyword)
		if k == "" || seen[k] || len(out.Keywords) >= maxKeywords {
			continue
		}
		seen[k] = true
		out.Keywords = append(out.Keywords, k)
	}
	return out
}

// clip collapses white space and keeps at most n bytes of whole runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimSpace(s[:n])
}

// Fields returns the metadata as item metadata fields: title, author,
// description (strings), keywords (a list of strings) and date (RFC 3339),
// each only when present.
func (m Metadata) Fields() map[string]any {
	out := map[string]any{}
	for k, v := range map[string]string{"title": m.Title, "author": m.Author, "description": m.Description} {
		if v != "" {
			out[k] = v
		}
	}
	if len(m.Keywords) > 0 {
		kw := make([]any, len(m.Keywords))
		for i, k := range m.Keywords {
			kw[i] = k
		}
		out["keywords"] = kw
	}
	if !m.Date.IsZero() {
		out["date"] = m.Date.Format(time.RFC3339)
	}
	return out
}

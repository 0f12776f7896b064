package ingest

import "strings"

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

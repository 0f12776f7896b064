package parse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"capsuled/internal/ingest"
	"github.com/ledongthuc/pdf"
)

// maxPDFPages bounds the pages read from one PDF.
const maxPDFPages = 5000

// parsePDF extracts one page block per page. Text comes in content-stream
// order (the order the producer wrote it, which is reading order for nearly
// every producer and keeps columns apart); a new line starts where the
// baseline moves, and a space goes where glyphs leave a gap.
func parsePDF(ctx context.Context, data []byte, _ string) (doc ingest.Document, err error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return ingest.Document{}, corrupt("PDF", nil, "no %%PDF- header")
	}
	if bytes.HasPrefix(data, []byte("%PDF-2")) {
		return ingest.Document{}, unprocessable("unsupported_pdf", nil, "unsupported PDF version %s: only PDF 1.x can be read", bytes.Fields(data[5:min(len(data), 16)])[0])
	}
	r, err := openPDF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(err.Error(), "encrypt") {
			return ingest.Document{}, unprocessable("encrypted_pdf", err, "encrypted PDF: password-protected files cannot be read")
		}
		return ingest.Document{}, corrupt("PDF", err, "%v", err)
	}
	pages, err := pageList(r)
	if err != nil {
		return ingest.Document{}, err
	}
	var b builder
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return ingest.Document{}, err
		}
		text, err := pageText(p)
		if err != nil {
			return ingest.Document{}, corrupt("PDF", err, "page %d: %v", i+1, err)
		}
		b.addPage(ingest.BlockPage, 0, i+1, text)
	}
	return b.doc(), nil
}

func openPDF(data io.ReaderAt, size int64) (r *pdf.Reader, err error) {
	defer func() {
		if v := recover(); v != nil {
			r, err = nil, fmt.Errorf("malformed PDF: %v", v)
		}
	}()
	return pdf.NewReader(data, size)
}

// pageList walks the page tree itself: the library's Page(n) loops for
// ever on a tree whose Kids point back at an ancestor. Depth and the number
// of nodes visited are bounded instead.
func pageList(r *pdf.Reader) (pages []pdf.Page, err error) {
	defer func() {
		if v := recover(); v != nil {
			pages, err = nil, corrupt("PDF", fmt.Errorf("%v", v), "unreadable page tree: %v", v)
		}
	}()
	root := r.Trailer().Key("Root").Key("Pages")
	if root.IsNull() {
		return nil, corrupt("PDF", nil, "no page tree")
	}
	visits := 0
	var walk func(v pdf.Value, depth int) error
	walk = func(v pdf.Value, depth int) error {
		visits++
		if depth > 32 || visits > 4*maxPDFPages {
			return corrupt("PDF", nil, "page tree too deep or cyclic")
		}
		if len(pages) > maxPDFPages {
			return corrupt("PDF", nil, "more than %d pages", maxPDFPages)
		}
		switch v.Key("Type").Name() {
		case "Pages":
			kids := v.Key("Kids")
			for i := 0; i < kids.Len(); i++ {
				if err := walk(kids.Index(i), depth+1); err != nil {
					return err
				}
			}
		case "Page":
			pages = append(pages, pdf.Page{V: v})
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return nil, err
	}
	return pages, nil
}

// pageText lays out one page's glyphs. The library panics on malformed
// content streams; that becomes an error.
func pageText(p pdf.Page) (s string, err error) {
	defer func() {
		if v := recover(); v != nil {
			s, err = "", fmt.Errorf("malformed content: %v", v)
		}
	}()
	if p.V.IsNull() {
		return "", nil
	}
	if err := checkContent(p); err != nil {
		return "", err
	}
	content := p.Content()
	return layoutGlyphs(content.Text), nil
}

// layoutGlyphs joins glyphs in stream order. A glyph whose baseline differs
// from the previous one by more than half a font size, or that moves back
// left by more than a font size, starts a new line; a vertical jump of more
// than twice the line's font size starts a new paragraph (a blank line). A
// horizontal gap of more than a fifth of the font size becomes a space.
func layoutGlyphs(glyphs []pdf.Text) string {
	var sb strings.Builder
	havePrev := false
	var px, py, pend, psize float64
	for _, g := range glyphs {
		if g.S == "" || g.S == "\n" {
			continue
		}
		size := g.FontSize
		if size <= 0 || math.IsNaN(size) || math.IsInf(size, 0) {
			size = 10
		}
		if havePrev {
			dy := math.Abs(g.Y - py)
			switch {
			case dy > math.Max(size, psize)*0.5 || g.X < px-size*1.0 && dy > 0.1:
				if dy > math.Max(size, psize)*2.0 {
					sb.WriteString("\n\n")
				} else {
					sb.WriteByte('\n')
				}
			case g.X-pend > size*0.2:
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(g.S)
		w := g.W
		if w <= 0 || math.IsNaN(w) {
			w = 0
		}
		px, py, pend, psize = g.X, g.Y, g.X+w, size
		havePrev = true
	}
	// tidy spaces: no runs of blanks, no trailing blanks on lines
	lines := strings.Split(sb.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(collapseRuns(l), " \t")
	}
	return strings.Join(lines, "\n")
}

// collapseRuns turns runs of spaces into one space.
func collapseRuns(s string) string {
	if !strings.Contains(s, "  ") {
		return s
	}
	var sb strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// maxContentBytes bounds the decoded content streams of one page.
const maxContentBytes = 64 << 20

// checkContent reads a page's decoded content streams and refuses the ones
// the library's lexer would spin on for ever: a stream that ends inside a
// hex string, because its reader returns "\n" at the end of input and the
// hex-string loop waits for a ">" that never comes.
func checkContent(p pdf.Page) error {
	strm := p.V.Key("Contents")
	var rd io.Reader
	if strm.Kind() == pdf.Array {
		readers := make([]io.Reader, 0, strm.Len())
		for i := 0; i < strm.Len(); i++ {
			readers = append(readers, strm.Index(i).Reader())
		}
		rd = io.MultiReader(readers...)
	} else {
		rd = strm.Reader()
	}
	data, err := io.ReadAll(io.LimitReader(rd, maxContentBytes+1))
	if err != nil {
		return fmt.Errorf("content stream: %w", err)
	}
	if len(data) > maxContentBytes {
		return fmt.Errorf("content streams larger than %d bytes", maxContentBytes)
	}
	if unterminatedHex(data) {
		return errors.New("content stream ends inside a hex string")
	}
	return nil
}

// unterminatedHex lexes a content stream as the library does (comments,
// nested literal strings with escapes, "<<") and reports whether a hex
// string "<…" runs to the end without its ">".
func unterminatedHex(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '%':
			for i < len(data) && data[i] != '\r' && data[i] != '\n' {
				i++
			}
		case '(':
			depth := 0
			for ; i < len(data); i++ {
				switch data[i] {
				case '\\':
					i++
				case '(':
					depth++
				case ')':
					depth--
				}
				if depth == 0 {
					break
				}
			}
		case '<':
			if i+1 < len(data) && data[i+1] == '<' {
				i++
				continue
			}
			j := bytes.IndexByte(data[i+1:], '>')
			if j < 0 {
				return true
			}
			i += j + 1
		}
	}
	return false
}

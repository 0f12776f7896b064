package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// maxPDFPages bounds the pages read from one PDF.
const maxPDFPages = 5000

// parsePDF extracts one page block per page. Text comes in content-stream
// order (the order the producer wrote it, which is reading order for nearly
// every producer and keeps columns apart); a new line starts where the
// baseline moves, and a space goes where glyphs leave a gap.
func parsePDF(ctx context.Context, data []byte, _ string) (doc Document, err error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return Document{}, corrupt("PDF", nil, "no %%PDF- header")
	}
	if bytes.HasPrefix(data, []byte("%PDF-2")) {
		return Document{}, unprocessable("unsupported_pdf", nil, "unsupported PDF version %s: only PDF 1.x can be read", bytes.Fields(data[5:min(len(data), 16)])[0])
	}
	r, err := openPDF(data)
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(err.Error(), "encrypt") {
			return Document{}, unprocessable("encrypted_pdf", err, "encrypted PDF: password-protected files cannot be read")
		}
		return Document{}, corrupt("PDF", err, "%v", err)
	}
	pages, err := numPages(r)
	if err != nil {
		return Document{}, err
	}
	if pages > maxPDFPages {
		return Document{}, corrupt("PDF", nil, "%d pages (limit %d)", pages, maxPDFPages)
	}
	var b builder
	for i := 1; i <= pages; i++ {
		if err := ctx.Err(); err != nil {
			return Document{}, err
		}
		text, err := pageText(r, i)
		if err != nil {
			return Document{}, corrupt("PDF", err, "page %d: %v", i, err)
		}
		b.addPage(BlockPage, 0, i, text)
	}
	return b.doc(), nil
}

func openPDF(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if v := recover(); v != nil {
			r, err = nil, fmt.Errorf("malformed PDF: %v", v)
		}
	}()
	return pdf.NewReader(bytes.NewReader(data), int64(len(data)))
}

func numPages(r *pdf.Reader) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, corrupt("PDF", fmt.Errorf("%v", v), "unreadable page tree: %v", v)
		}
	}()
	n = r.NumPage()
	if n < 0 {
		return 0, corrupt("PDF", nil, "negative page count")
	}
	return n, nil
}

// pageText lays out one page's glyphs. The library panics on malformed
// content streams; that becomes an error.
func pageText(r *pdf.Reader, num int) (s string, err error) {
	defer func() {
		if v := recover(); v != nil {
			s, err = "", fmt.Errorf("malformed content: %v", v)
		}
	}()
	p := r.Page(num)
	if p.V.IsNull() {
		return "", nil
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

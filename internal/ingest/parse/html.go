package parse

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"capsuled/internal/ingest"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// parseHTML extracts HTML; see the package comment for what is kept.
func parseHTML(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeHTML(data)
	root, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return ingest.Document{}, corrupt("HTML", err, "%v", err)
	}
	w := htmlWalker{ctx: ctx}
	w.walk(root, 0)
	w.flush()
	if w.err != nil {
		return ingest.Document{}, w.err
	}
	return w.b.doc(), nil
}

// decodeHTML honours a BOM, a <meta charset> or http-equiv in the first 1024
// bytes, and otherwise reads UTF-8 (or Windows-1252 when not UTF-8).
func decodeHTML(data []byte) string {
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) {
		return decodeText(data)
	}
	enc, name, certain := charset.DetermineEncoding(data, "text/html")
	if certain && name != "utf-8" && enc != nil {
		if out, err := enc.NewDecoder().Bytes(data); err == nil {
			return cleanText(string(out))
		}
	}
	return decodeText(data)
}

// skipped elements hold no document text.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Head: true,
	atom.Nav: true, atom.Svg: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Canvas: true, atom.Button: true, atom.Select: true, atom.Textarea: true, atom.Input: true,
	atom.Form: true, atom.Title: true, atom.Footer: true, atom.Math: true, atom.Audio: true, atom.Video: true, atom.Dialog: true,
}

// blockish elements end the paragraph before and after them.
var blockish = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Blockquote: true, atom.Li: true, atom.Dd: true, atom.Dt: true, atom.Dl: true, atom.Figure: true,
	atom.Figcaption: true, atom.Header: true, atom.Address: true, atom.Details: true,
	atom.Summary: true, atom.Hr: true, atom.Aside: true, atom.Body: true, atom.Html: true, atom.Caption: true,
	atom.Center: true, atom.Fieldset: true, atom.Legend: true,
}

const maxHTMLDepth = 256

type htmlWalker struct {
	ctx   context.Context
	b     builder
	inl   strings.Builder
	err   error
	nodes int
}

func hidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if a.Val == "true" {
				return true
			}
		case "role":
			if a.Val == "navigation" {
				return true
			}
		case "style":
			v := strings.ReplaceAll(strings.ToLower(a.Val), " ", "")
			if strings.Contains(v, "display:none") || strings.Contains(v, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

func (w *htmlWalker) flush() {
	s := w.inl.String()
	w.inl.Reset()
	if strings.TrimSpace(s) == "" {
		return
	}
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	w.b.add(ingest.BlockParagraph, 0, strings.Join(lines, "\n"))
}

func (w *htmlWalker) walk(n *html.Node, depth int) {
	if w.err != nil {
		return
	}
	w.nodes++
	if w.nodes%4096 == 0 {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			return
		}
	}
	switch n.Type {
	case html.TextNode:
		appendCollapsed(&w.inl, n.Data)
		return
	case html.ElementNode:
		if skipped[n.DataAtom] || hidden(n) {
			return
		}
		switch n.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			w.flush()
			w.b.add(ingest.BlockHeading, int(n.Data[1]-'0'), textOf(n, false))
			return
		case atom.Pre:
			w.flush()
			w.b.add(ingest.BlockCode, 0, textOf(n, true))
			return
		case atom.Ul, atom.Ol:
			w.flush()
			var lines []string
			listLines(n, 0, &lines)
			w.b.add(ingest.BlockList, 0, strings.Join(lines, "\n"))
			return
		case atom.Table:
			w.flush()
			w.b.add(ingest.BlockTable, 0, tableText(n))
			return
		case atom.Br:
			w.inl.WriteByte('\n')
			return
		case atom.Img:
			return
		}
	}
	block := n.Type == html.ElementNode && blockish[n.DataAtom]
	if block {
		w.flush()
	}
	if depth < maxHTMLDepth {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			w.walk(c, depth+1)
		}
	}
	if block {
		w.flush()
	}
}

func appendCollapsed(sb *strings.Builder, s string) {
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\u00a0' {
			space = true
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
	}
	if space {
		sb.WriteByte(' ')
	}
}

// textOf returns the text under n: verbatim when pre, else collapsed.
func textOf(n *html.Node, pre bool) string {
	var sb strings.Builder
	var rec func(*html.Node, int)
	rec = func(n *html.Node, depth int) {
		if depth > maxHTMLDepth {
			return
		}
		switch n.Type {
		case html.TextNode:
			if pre {
				sb.WriteString(n.Data)
			} else {
				appendCollapsed(&sb, n.Data)
			}
			return
		case html.ElementNode:
			if skipped[n.DataAtom] || hidden(n) {
				return
			}
			if n.DataAtom == atom.Br {
				if pre {
					sb.WriteByte('\n')
				} else {
					sb.WriteByte(' ')
				}
				return
			}
			if !pre && blockish[n.DataAtom] {
				sb.WriteByte(' ')
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c, depth+1)
		}
	}
	rec(n, 0)
	if pre {
		return sb.String()
	}
	return collapseSpace(sb.String())
}

// listLines renders the items of a ul/ol, nested lists indented.
func listLines(n *html.Node, depth int, out *[]string) {
	if depth > 32 {
		return
	}
	num := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || c.DataAtom != atom.Li || hidden(c) {
			continue
		}
		num++
		marker := "-"
		if n.DataAtom == atom.Ol {
			marker = fmt.Sprintf("%d.", num)
		}
		var sb strings.Builder
		var nested []*html.Node
		for d := c.FirstChild; d != nil; d = d.NextSibling {
			if d.Type == html.ElementNode && (d.DataAtom == atom.Ul || d.DataAtom == atom.Ol) {
				nested = append(nested, d)
				continue
			}
			if d.Type == html.TextNode {
				appendCollapsed(&sb, d.Data)
			} else {
				sb.WriteByte(' ')
				sb.WriteString(textOf(d, false))
				sb.WriteByte(' ')
			}
		}
		if t := collapseSpace(sb.String()); t != "" {
			*out = append(*out, strings.Repeat("  ", depth)+marker+" "+t)
		}
		for _, d := range nested {
			listLines(d, depth+1, out)
		}
	}
}

// tableText renders a table one row a line; when the first row is made of
// th cells (or sits in thead) it is the header and each row becomes
// "header: value; …".
func tableText(t *html.Node) string {
	var rows [][]string
	headerRow := -1
	var rec func(*html.Node, bool, int)
	rec = func(n *html.Node, inHead bool, depth int) {
		if depth > 8 {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Thead:
				rec(c, true, depth+1)
			case atom.Tbody, atom.Tfoot:
				rec(c, false, depth+1)
			case atom.Tr:
				var cells []string
				allTh := true
				for d := c.FirstChild; d != nil; d = d.NextSibling {
					if d.Type == html.ElementNode && (d.DataAtom == atom.Td || d.DataAtom == atom.Th) {
						cells = append(cells, textOf(d, false))
						if d.DataAtom != atom.Th {
							allTh = false
						}
					}
				}
				if len(cells) == 0 {
					continue
				}
				if len(rows) == 0 && (inHead || allTh) {
					headerRow = 0
				}
				rows = append(rows, cells)
			}
		}
	}
	rec(t, false, 0)
	if len(rows) == 0 {
		return ""
	}
	if headerRow == 0 {
		return renderTable(rows[0], rows[1:])
	}
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, renderRow(nil, r))
	}
	return strings.Join(lines, "\n")
}

package parse

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"capsuled/internal/ingest"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
)

// newMarkdownParser returns a CommonMark parser with the GitHub table and
// strike-through extensions. A goldmark parser keeps no state between
// calls, so one serves every call.
func newMarkdownParser() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)).Parser()
}

var markdownParser = newMarkdownParser()

// parseMarkdown extracts Markdown; see the package comment for what is kept.
// The text is parsed by goldmark (CommonMark with GitHub tables and
// strike-through) and its syntax tree walked into blocks.
func parseMarkdown(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	body, _ := splitFrontMatter(text)
	src := []byte(body)
	root := markdownParser.Parse(gmtext.NewReader(src))
	w := mdWalker{ctx: ctx, src: src}
	w.blocks(root, false)
	if w.err != nil {
		return ingest.Document{}, w.err
	}
	return w.b.doc(), nil
}

// splitFrontMatter cuts YAML front matter (a first line "---" and a closing
// "---" or "..." line within 500 lines) off text; front is its body without
// the fences, "" when there is none.
func splitFrontMatter(text string) (body, front string) {
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimSpace(first) != "---" {
		return text, ""
	}
	off := len(first) + 1
	for range 500 {
		line, next, more := strings.Cut(rest, "\n")
		if t := strings.TrimSpace(line); t == "---" || t == "..." {
			if more {
				return next, text[len(first)+1 : off]
			}
			return "", text[len(first)+1 : off]
		}
		if !more {
			break
		}
		off += len(line) + 1
		rest = next
	}
	return text, ""
}

// mdWalker turns a goldmark syntax tree into blocks.
type mdWalker struct {
	ctx   context.Context
	src   []byte
	b     builder
	nodes int
	err   error
}

// canceled checks the context every 1024 block nodes.
func (w *mdWalker) canceled() bool {
	if w.err != nil {
		return true
	}
	w.nodes++
	if w.nodes%1024 == 0 {
		w.err = w.ctx.Err()
	}
	return w.err != nil
}

// blocks adds the block children of parent. Inside a block quote (quoted)
// headings are paragraphs: a quoted heading is not the document's own.
func (w *mdWalker) blocks(parent ast.Node, quoted bool) {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		if w.canceled() {
			return
		}
		if l, ok := n.(*ast.List); ok {
			// Adjacent lists (a bullet list followed by a numbered one) are
			// one list block, as a reader sees them.
			var sb strings.Builder
			w.list(&sb, l, 0)
			for next, ok := n.NextSibling().(*ast.List); ok; next, ok = n.NextSibling().(*ast.List) {
				n = next
				w.list(&sb, next, 0)
			}
			w.b.add(ingest.BlockList, 0, sb.String())
			continue
		}
		switch n := n.(type) {
		case *ast.Heading:
			if quoted {
				w.b.add(ingest.BlockParagraph, 0, w.inline(n))
			} else {
				w.b.add(ingest.BlockHeading, n.Level, w.inline(n))
			}
		case *ast.Paragraph, *ast.TextBlock:
			w.b.add(ingest.BlockParagraph, 0, w.inline(n))
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			w.b.add(ingest.BlockCode, 0, w.lines(n))
		case *east.Table:
			w.b.add(ingest.BlockTable, 0, w.table(n))
		case *ast.Blockquote:
			w.blocks(n, true)
		case *ast.HTMLBlock:
			w.b.add(ingest.BlockParagraph, 0, htmlBlockText(w.lines(n)))
		case *ast.ThematicBreak:
		default:
			w.blocks(n, quoted)
		}
	}
}

// lines returns the raw lines of a code or HTML block, without the last
// newline.
func (w *mdWalker) lines(n ast.Node) string {
	var sb strings.Builder
	segs := n.Lines()
	for i := range segs.Len() {
		s := segs.At(i)
		sb.Write(s.Value(w.src))
	}
	if h, ok := n.(*ast.HTMLBlock); ok && h.HasClosure() {
		sb.Write(h.ClosureLine.Value(w.src))
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// inline returns the text of n's inline children: emphasis, strike-through
// and code-span markers are dropped, a link keeps its text and an image its
// alt text, an autolink its address (without mailto:), inline HTML is
// dropped, escapes and entities are resolved; a hard line break is a
// newline and a soft one a space.
func (w *mdWalker) inline(n ast.Node) string {
	var sb strings.Builder
	w.inlineInto(&sb, n)
	return sb.String()
}

func (w *mdWalker) inlineInto(sb *strings.Builder, n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(w.src)
			if !c.IsRaw() {
				v = resolveMarkdownText(v)
			}
			sb.Write(v)
			if c.HardLineBreak() {
				sb.WriteByte('\n')
			} else if c.SoftLineBreak() {
				sb.WriteByte(' ')
			}
		case *ast.String:
			sb.Write(c.Value)
		case *ast.CodeSpan:
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if t, ok := t.(*ast.Text); ok {
					v := t.Segment.Value(w.src)
					if bytes.HasSuffix(v, []byte("\n")) {
						v = append(v[:len(v)-1:len(v)-1], ' ')
					}
					sb.Write(v)
				}
			}
		case *ast.AutoLink:
			sb.WriteString(strings.TrimPrefix(string(c.Label(w.src)), "mailto:"))
		case *ast.RawHTML:
		default: // emphasis, links, images, strike-through
			w.inlineInto(sb, c)
		}
	}
}

// resolveMarkdownText resolves backslash escapes and character references.
func resolveMarkdownText(v []byte) []byte {
	if bytes.IndexByte(v, '&') >= 0 {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(v))
	}
	if bytes.IndexByte(v, '\\') >= 0 {
		v = util.UnescapePunctuations(v)
	}
	return v
}

// blockText is the text of any block on one line, for list items.
func (w *mdWalker) blockText(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading:
		return w.inline(n)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return w.lines(n)
	case *ast.HTMLBlock:
		return htmlBlockText(w.lines(n))
	case *east.Table:
		return w.table(n)
	}
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		parts = append(parts, w.blockText(c))
	}
	return strings.Join(parts, " ")
}

// list writes a list an item a line, "- " or "N. " markers, nested lists
// indented two spaces a level under their item.
func (w *mdWalker) list(sb *strings.Builder, l *ast.List, depth int) {
	num := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		if w.canceled() {
			return
		}
		marker := "-"
		if l.IsOrdered() {
			marker = strconv.Itoa(num) + "."
			num++
		}
		var parts []string
		var nested []*ast.List
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if sub, ok := c.(*ast.List); ok {
				nested = append(nested, sub)
				continue
			}
			parts = append(parts, w.blockText(c))
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(strings.Repeat("  ", depth))
		sb.WriteString(marker)
		sb.WriteByte(' ')
		sb.WriteString(collapseSpace(strings.Join(parts, " ")))
		for _, sub := range nested {
			w.list(sb, sub, depth+1)
		}
	}
}

// table renders a table a row a line, "header: value; …".
func (w *mdWalker) table(t *east.Table) string {
	var header []string
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, collapseSpace(w.inline(c)))
		}
		if _, ok := r.(*east.TableHeader); ok {
			header = cells
		} else {
			rows = append(rows, cells)
		}
	}
	return renderTable(header, rows)
}

// htmlBlockText is the text of a block of raw HTML: its text nodes with
// white space collapsed; comments, scripts and styles dropped.
func htmlBlockText(raw string) string {
	z := html.NewTokenizer(strings.NewReader(raw))
	var sb strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return collapseSpace(sb.String())
		case html.StartTagToken:
			if name, _ := z.TagName(); string(name) == "script" || string(name) == "style" {
				skip++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); (string(name) == "script" || string(name) == "style") && skip > 0 {
				skip--
			}
		case html.TextToken:
			if skip == 0 {
				sb.Write(z.Text())
				sb.WriteByte(' ')
			}
		}
	}
}

// renderTable renders rows one a line as "header: value; …"; a table with
// no data rows renders its header.
func renderTable(header []string, rows [][]string) string {
	var sb strings.Builder
	if len(rows) == 0 {
		return strings.Join(header, " | ")
	}
	for k, r := range rows {
		if k > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(renderRow(header, r))
	}
	return sb.String()
}

func renderRow(header, r []string) string {
	var sb strings.Builder
	for c, v := range r {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("; ")
		}
		if c < len(header) && header[c] != "" {
			sb.WriteString(header[c])
			sb.WriteString(": ")
		}
		sb.WriteString(v)
	}
	return sb.String()
}

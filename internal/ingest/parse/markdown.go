package parse

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"capsuled/internal/ingest"
)

var (
	atxRe        = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRe     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	fenceRe      = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})(.*)$")
	thematicRe   = regexp.MustCompile(`^ {0,3}([-*_])(?:[ \t]*[-*_]){2,}[ \t]*$`)
	listItemRe   = regexp.MustCompile(`^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$`)
	tableDelimRe = regexp.MustCompile(`^\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?$`)
	refDefRe     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:[ \t]*\S+`)
	quoteRe      = regexp.MustCompile(`^ {0,3}>[ ]?`)
)

// parseMarkdown extracts Markdown; see the package comment for what is kept.
func parseMarkdown(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	p := mdParser{lines: strings.Split(text, "\n")}
	if err := p.run(ctx); err != nil {
		return ingest.Document{}, err
	}
	return p.b.doc(), nil
}

type mdParser struct {
	lines []string
	b     builder
	para  []string // pending paragraph lines
}

func (p *mdParser) flush() {
	if len(p.para) == 0 {
		return
	}
	var sb strings.Builder
	for i, l := range p.para {
		hard := strings.HasSuffix(l, "  ") || strings.HasSuffix(l, "\\")
		l = strings.TrimSpace(l)
		if hard {
			l = strings.TrimSuffix(l, "\\")
		}
		sb.WriteString(l)
		if i < len(p.para)-1 {
			if hard {
				sb.WriteByte('\n')
			} else {
				sb.WriteByte(' ')
			}
		}
	}
	p.b.add(ingest.BlockParagraph, 0, stripInline(sb.String()))
	p.para = p.para[:0]
}

func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

func indentWidth(l string) int {
	w := 0
	for _, c := range l {
		switch c {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}

// dedent removes up to n columns of leading white space.
func dedent(l string, n int) string {
	w := 0
	for i, c := range l {
		if w >= n {
			return l[i:]
		}
		switch c {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return l[i:]
		}
	}
	return ""
}

func (p *mdParser) run(ctx context.Context) error {
	lines := p.lines
	i := 0
	// YAML front matter
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for j := 1; j < len(lines) && j < 500; j++ {
			if t := strings.TrimSpace(lines[j]); t == "---" || t == "..." {
				i = j + 1
				break
			}
		}
	}
	for i < len(lines) {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		l := lines[i]
		if isBlank(l) {
			p.flush()
			i++
			continue
		}
		if m := fenceRe.FindStringSubmatch(l); m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`")) {
			p.flush()
			i = p.fenced(i, len(m[1]), m[2])
			continue
		}
		if m := atxRe.FindStringSubmatch(l); m != nil {
			p.flush()
			p.b.add(ingest.BlockHeading, len(m[1]), stripInline(m[2]))
			i++
			continue
		}
		if len(p.para) > 0 {
			if m := setextRe.FindStringSubmatch(l); m != nil {
				level := 2
				if m[1][0] == '=' {
					level = 1
				}
				title := strings.Join(p.para, " ")
				p.para = p.para[:0]
				p.b.add(ingest.BlockHeading, level, stripInline(title))
				i++
				continue
			}
		}
		if thematicRe.MatchString(l) {
			p.flush()
			i++
			continue
		}
		if strings.Contains(l, "|") && i+1 < len(lines) && tableDelimRe.MatchString(strings.TrimSpace(lines[i+1])) && strings.Contains(lines[i+1], "-") {
			p.flush()
			i = p.table(i)
			continue
		}
		if len(p.para) == 0 && indentWidth(l) >= 4 {
			i = p.indented(i)
			continue
		}
		if m := listItemRe.FindStringSubmatch(l); m != nil && !(len(p.para) > 0 && m[3] == "") {
			p.flush()
			i = p.list(i)
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "<!--") {
			p.flush()
			i = p.comment(i)
			continue
		}
		if len(p.para) == 0 && refDefRe.MatchString(l) {
			i++
			continue
		}
		if loc := quoteRe.FindStringIndex(l); loc != nil {
			for loc != nil {
				l = l[loc[1]:]
				loc = quoteRe.FindStringIndex(l)
			}
			if isBlank(l) {
				p.flush()
			} else if m := atxRe.FindStringSubmatch(l); m != nil {
				p.flush()
				p.para = append(p.para, m[2])
				p.flush()
			} else {
				p.para = append(p.para, l)
			}
			i++
			continue
		}
		p.para = append(p.para, l)
		i++
	}
	p.flush()
	return nil
}

func (p *mdParser) fenced(i, indent int, fence string) int {
	var body []string
	j := i + 1
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		t := strings.TrimSpace(l)
		if indentWidth(l) < 4 && strings.HasPrefix(t, fence[:1]) && len(t) >= len(fence) && strings.Trim(t, fence[:1]) == "" {
			j++
			break
		}
		body = append(body, dedent(l, indent))
	}
	p.b.add(ingest.BlockCode, 0, strings.Join(body, "\n"))
	return j
}

func (p *mdParser) indented(i int) int {
	var body []string
	j := i
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		if !isBlank(l) && indentWidth(l) < 4 {
			break
		}
		body = append(body, dedent(l, 4))
	}
	p.b.add(ingest.BlockCode, 0, strings.Join(body, "\n"))
	return j
}

func (p *mdParser) comment(i int) int {
	for j := i; j < len(p.lines); j++ {
		if strings.Contains(p.lines[j], "-->") {
			return j + 1
		}
	}
	return len(p.lines)
}

func (p *mdParser) list(i int) int {
	type item struct {
		indent int
		marker string
		text   []string
	}
	var items []item
	j := i
	for j < len(p.lines) {
		l := p.lines[j]
		if isBlank(l) {
			// the list goes on if the next non-blank line is an item or indented
			k := j + 1
			for k < len(p.lines) && isBlank(p.lines[k]) {
				k++
			}
			if k < len(p.lines) && (listItemRe.MatchString(p.lines[k]) || indentWidth(p.lines[k]) >= 2) && !fenceRe.MatchString(p.lines[k]) {
				j = k
				continue
			}
			break
		}
		if m := listItemRe.FindStringSubmatch(l); m != nil && !thematicRe.MatchString(l) {
			marker := m[2]
			if marker == "*" || marker == "+" {
				marker = "-"
			} else if strings.HasSuffix(marker, ")") {
				marker = strings.TrimSuffix(marker, ")") + "."
			}
			items = append(items, item{indent: indentWidth(m[1]), marker: marker, text: []string{m[3]}})
			j++
			continue
		}
		if len(items) == 0 || (indentWidth(l) < 2 && (atxRe.MatchString(l) || fenceRe.MatchString(l) || thematicRe.MatchString(l) || quoteRe.MatchString(l))) {
			break
		}
		t := strings.TrimSpace(l)
		if fenceRe.MatchString(t) {
			j++
			continue // fences inside items: keep their lines as text
		}
		items[len(items)-1].text = append(items[len(items)-1].text, t)
		j++
	}
	// depth from indentation: each distinct deeper indent is one more level
	var sb strings.Builder
	var stack []int
	for k, it := range items {
		for len(stack) > 0 && stack[len(stack)-1] > it.indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 || stack[len(stack)-1] < it.indent {
			stack = append(stack, it.indent)
		}
		if k > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(strings.Repeat("  ", len(stack)-1))
		sb.WriteString(it.marker)
		sb.WriteByte(' ')
		sb.WriteString(collapseSpace(stripInline(strings.Join(it.text, " "))))
	}
	p.b.add(ingest.BlockList, 0, sb.String())
	if j == i {
		j++ // never stall
	}
	return j
}

func (p *mdParser) table(i int) int {
	header := splitRow(p.lines[i])
	var rows [][]string
	j := i + 2
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		if isBlank(l) || !strings.Contains(l, "|") {
			break
		}
		rows = append(rows, splitRow(l))
	}
	for k := range header {
		header[k] = collapseSpace(stripInline(header[k]))
	}
	for _, r := range rows {
		for k := range r {
			r[k] = collapseSpace(stripInline(r[k]))
		}
	}
	p.b.add(ingest.BlockTable, 0, renderTable(header, rows))
	return j
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

// splitRow splits a Markdown table row on pipes that are not escaped and not
// inside a code span.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, "\\|") {
		l = l[:len(l)-1]
	}
	var cells []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// stripInline removes Markdown inline markup: emphasis and strike-through
// markers, code-span backticks, HTML tags and comments, link and image
// syntax (keeping the link text or alt text; URLs are dropped, autolinks keep
// their URL) and backslash escapes.
func stripInline(s string) string {
	if !strings.ContainsAny(s, "\\`*_~[]!<") {
		return s
	}
	var out strings.Builder
	out.Grow(len(s))
	stripInto(&out, s, 0)
	return out.String()
}

func isPunct(c byte) bool {
	return c < utf8.RuneSelf && unicode.IsPunct(rune(c)) || strings.IndexByte("$+<=>^`|~", c) >= 0
}

func isWordByte(c byte) bool {
	return c >= utf8.RuneSelf || c == '_' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func stripInto(out *strings.Builder, s string, depth int) {
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) && isPunct(s[i+1]) {
				out.WriteByte(s[i+1])
				i += 2
				continue
			}
		case '`':
			n := runLen(s, i, '`')
			if end := findCodeClose(s, i+n, n); end >= 0 {
				body := s[i+n : end]
				if len(body) > 1 && body[0] == ' ' && body[len(body)-1] == ' ' && strings.TrimSpace(body) != "" {
					body = body[1 : len(body)-1]
				}
				out.WriteString(body)
				i = end + n
				continue
			}
			out.WriteString(s[i : i+n])
			i += n
			continue
		case '*', '~':
			n := runLen(s, i, c)
			if c == '~' && n != 2 {
				break
			}
			prevSpace := i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n'
			nextSpace := i+n >= len(s) || s[i+n] == ' ' || s[i+n] == '\t' || s[i+n] == '\n'
			if !(prevSpace && nextSpace) {
				i += n
				continue
			}
			out.WriteString(s[i : i+n])
			i += n
			continue
		case '_':
			n := runLen(s, i, '_')
			prevWord := i > 0 && isWordByte(s[i-1])
			nextWord := i+n < len(s) && isWordByte(s[i+n])
			if prevWord != nextWord { // a flanking run, not intra-word
				i += n
				continue
			}
			out.WriteString(s[i : i+n])
			i += n
			continue
		case '!':
			if i+1 < len(s) && s[i+1] == '[' && depth < 8 {
				if text, next, ok := parseLink(s, i+1); ok {
					stripInto(out, text, depth+1)
					i = next
					continue
				}
			}
		case '[':
			if depth < 8 {
				if text, next, ok := parseLink(s, i); ok {
					stripInto(out, text, depth+1)
					i = next
					continue
				}
			}
		case '<':
			if end := strings.IndexByte(s[i:], '>'); end > 0 {
				inner := s[i+1 : i+end]
				switch {
				case strings.HasPrefix(inner, "!--"):
					if e := strings.Index(s[i:], "-->"); e > 0 {
						i += e + 3
						continue
					}
				case isAutolink(inner):
					out.WriteString(strings.TrimPrefix(inner, "mailto:"))
					i += end + 1
					continue
				case isTag(inner):
					i += end + 1
					continue
				}
			}
		}
		out.WriteByte(c)
		i++
	}
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// findCodeClose finds a run of exactly n backticks at or after i.
func findCodeClose(s string, i, n int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], '`')
		if j < 0 {
			return -1
		}
		j += i
		m := runLen(s, j, '`')
		if m == n {
			return j
		}
		i = j + m
	}
	return -1
}

// parseLink parses "[text](dest)", "[text][ref]" or "[text][]" at s[i] == '['.
func parseLink(s string, i int) (text string, next int, ok bool) {
	depth := 0
	j := i
	for ; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
			continue
		case '[':
			depth++
		case ']':
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(s) || depth != 0 {
		return "", 0, false
	}
	text = s[i+1 : j]
	k := j + 1
	if k < len(s) && s[k] == '(' {
		d := 0
		for m := k; m < len(s); m++ {
			switch s[m] {
			case '\\':
				m++
			case '(':
				d++
			case ')':
				d--
				if d == 0 {
					return text, m + 1, true
				}
			}
		}
		return "", 0, false
	}
	if k < len(s) && s[k] == '[' {
		if e := strings.IndexByte(s[k:], ']'); e >= 0 {
			return text, k + e + 1, true
		}
	}
	return "", 0, false
}

func isAutolink(s string) bool {
	if strings.ContainsAny(s, " \t\n<") {
		return false
	}
	if i := strings.Index(s, ":"); i >= 2 && i <= 32 {
		for _, c := range s[:i] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-') {
				return false
			}
		}
		return true
	}
	return strings.Contains(s, "@") && strings.Contains(s, ".")
}

func isTag(s string) bool {
	s = strings.TrimPrefix(s, "/")
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c == ' ' || c == '\t' || c == '\n' || c == '/' {
			return true
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

package toolresult

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Hit is one document named by a tool result.
type Hit struct {
	ID    string
	Title string
	Text  string
	Score float64 // 0 when the result carried none
	// Truncated is true when the text looks cut short ("…", "...",
	// "[truncated]" at its end).
	Truncated bool
}

// Limits that keep odd input cheap.
const (
	maxHits     = 1000
	maxTextLen  = 64 << 10
	maxIDLen    = 256
	maxDepth    = 8
	maxInputLen = 16 << 20
)

var (
	idKeys    = []string{"doc_id", "document_id", "item_id", "_id", "id", "docid", "corpus_id", "pid", "uuid", "key"}
	textKeys  = []string{"content", "text", "snippet", "chunk", "body", "passage", "page_content", "document", "excerpt", "summary", "highlight"}
	titleKeys = []string{"title", "name", "file_name", "heading"}
	scoreKeys = []string{"score", "_score", "relevance", "similarity", "rank_score"}
	listKeys  = []string{"results", "hits", "documents", "docs", "data", "items", "matches", "chunks", "passages", "records", "output"}
)

// Parse reads the hits of one tool result, in the order given, each id once.
func Parse(content string) []Hit {
	if len(content) > maxInputLen {
		content = content[:maxInputLen]
	}
	s := strings.TrimSpace(content)
	if s == "" {
		return nil
	}
	if hits, ok := parseFlat(s); ok {
		return dedupe(hits)
	}
	var hits []Hit
	if s[0] == '[' || s[0] == '{' {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && strings.TrimSpace(s[dec.InputOffset():]) == "" {
			hits = fromJSON(v, 0, hits)
			return dedupe(hits)
		}
	}
	return dedupe(fromText(s))
}

func fromJSON(v any, depth int, out []Hit) []Hit {
	if depth > maxDepth || len(out) >= maxHits {
		return out
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if len(out) >= maxHits {
				break
			}
			switch e := e.(type) {
			case map[string]any:
				out = fromObject(e, depth+1, out)
			case string:
				if id := cleanID(e); id != "" && !strings.ContainsAny(e, " \n\t") {
					out = append(out, Hit{ID: id})
				}
			case json.Number:
				out = append(out, Hit{ID: e.String()})
			case []any:
				out = fromJSON(e, depth+1, out)
			}
		}
	case map[string]any:
		out = fromObject(x, depth+1, out)
	}
	return out
}

func fromObject(m map[string]any, depth int, out []Hit) []Hit {
	if h, ok := hitOf(m); ok {
		return append(out, h)
	}
	// A wrapper: a list under a known key, or any list of objects.
	for _, k := range listKeys {
		if l, ok := m[k]; ok {
			if _, isList := l.([]any); isList {
				return fromJSON(l, depth, out)
			}
			if o, isObj := l.(map[string]any); isObj {
				return fromObject(o, depth+1, out)
			}
		}
	}
	for _, k := range sortedKeys(m) {
		if l, ok := m[k].([]any); ok {
			out = fromJSON(l, depth, out)
		}
	}
	return out
}

// hitOf reads one hit object. Ids may sit in a nested "metadata" or
// "document" object.
func hitOf(m map[string]any) (Hit, bool) {
	var h Hit
	h.ID = firstString(m, idKeys)
	h.Text = firstString(m, textKeys)
	h.Title = firstString(m, titleKeys)
	for _, nest := range []string{"metadata", "document", "doc", "source", "_source", "payload"} {
		n, ok := m[nest].(map[string]any)
		if !ok {
			continue
		}
		if h.ID == "" {
			h.ID = firstString(n, idKeys)
		}
		if h.Text == "" {
			h.Text = firstString(n, textKeys)
		}
		if h.Title == "" {
			h.Title = firstString(n, titleKeys)
		}
	}
	h.ID = cleanID(h.ID)
	if h.ID == "" {
		return Hit{}, false
	}
	for _, k := range scoreKeys {
		if n, ok := m[k].(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				h.Score = f
				break
			}
		}
	}
	if len(h.Text) > maxTextLen {
		h.Text = h.Text[:maxTextLen]
	}
	h.Truncated = looksTruncated(h.Text)
	return h, true
}

func firstString(m map[string]any, keys []string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if strings.TrimSpace(v) != "" {
				return v
			}
		case json.Number:
			return v.String()
		case []any: // highlight lists and the like
			var parts []string
			for _, e := range v {
				if s, ok := e.(string); ok {
					parts = append(parts, s)
				}
			}
			if len(parts) > 0 {
				return strings.Join(parts, " … ")
			}
		}
	}
	return ""
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// insertion sort: maps are small, and the order must be deterministic
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func cleanID(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxIDLen || strings.ContainsAny(s, "\n\r\t") {
		return ""
	}
	return s
}

func looksTruncated(text string) bool {
	t := strings.TrimSpace(text)
	// "[truncated]" in any case: lower-casing maps rune by rune, so the
	// last 64 bytes from a rune's start (at least 16 runes) decide it
	tail := t[max(0, len(t)-64):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return strings.HasSuffix(t, "…") || strings.HasSuffix(t, "...") ||
		strings.HasSuffix(strings.ToLower(tail), "[truncated]") || strings.HasSuffix(t, "[…]")
}

var (
	// "[doc-1] text", "1. [doc-1] text", "- [doc-1]: text"
	bracketID = regexp.MustCompile(`^\s*(?:[-*•]\s*|\d{1,4}[.)]\s*)?\[([^\]\s]{1,256})\]\s*[:\-–—]?\s*`)
	// "id: doc-1", "doc_id=doc-1", "ID: doc-1 |", "(id: doc-1)"
	keyedID = regexp.MustCompile(`(?i)\b(?:doc(?:ument)?[ _-]?id|item[ _-]?id|_id|id)\s*[:=]\s*["'\x60]?([A-Za-z0-9][A-Za-z0-9_\-.:/]{0,255}?)["'\x60]?(?:[\s,;|)\]]|$)`)
)

// fromText reads plain text: each line that names an id starts a hit; the
// lines after it, up to the next id, are its text.
func fromText(s string) []Hit {
	var out []Hit
	cur := -1
	for _, line := range strings.Split(s, "\n") {
		if len(out) >= maxHits {
			break
		}
		id, rest := lineID(line)
		if id != "" {
			h := Hit{ID: id, Text: strings.TrimSpace(rest)}
			h.Title = titleOf(h.Text)
			out = append(out, h)
			cur = len(out) - 1
			continue
		}
		if cur >= 0 && len(out[cur].Text) < maxTextLen {
			t := strings.TrimSpace(line)
			if t == "" {
				continue
			}
			if lower := strings.ToLower(t); strings.HasPrefix(lower, "title:") && out[cur].Title == "" {
				out[cur].Title = strings.TrimSpace(t[len("title:"):])
			}
			if out[cur].Text != "" {
				out[cur].Text += "\n"
			}
			out[cur].Text += t
		}
	}
	for i := range out {
		if len(out[i].Text) > maxTextLen {
			out[i].Text = out[i].Text[:maxTextLen]
		}
		out[i].Truncated = looksTruncated(out[i].Text)
	}
	return out
}

func lineID(line string) (id, rest string) {
	if m := bracketID.FindStringSubmatchIndex(line); m != nil {
		id = cleanID(line[m[2]:m[3]])
		if id != "" && !isNumberOnly(id) {
			return id, line[m[1]:]
		}
	}
	if m := keyedID.FindStringSubmatchIndex(line); m != nil {
		id = cleanID(strings.TrimRight(line[m[2]:m[3]], ".:"))
		if id != "" {
			rest = line[:m[0]] + " " + line[m[1]:]
			return id, strings.Trim(rest, " |,;-")
		}
	}
	return "", ""
}

func isNumberOnly(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && len(s) <= 2 // "[1]" is a citation marker, "[12345]" an id
}

// titleOf takes "Title: text" or "Title — text" leads as a title.
func titleOf(text string) string {
	for _, sep := range []string{" — ", " - ", " | ", ": "} {
		if i := strings.Index(text, sep); i > 0 && i < 120 {
			return strings.TrimSpace(text[:i])
		}
	}
	return ""
}

func dedupe(hits []Hit) []Hit {
	if len(hits) < 2 {
		return hits
	}
	seen := make(map[string]int, len(hits))
	out := hits[:0]
	for _, h := range hits {
		if i, ok := seen[h.ID]; ok {
			if len(h.Text) > len(out[i].Text) && !bytes.Equal([]byte(h.Text), []byte(out[i].Text)) {
				out[i].Text += "\n" + h.Text
			}
			continue
		}
		seen[h.ID] = len(out)
		out = append(out, h)
	}
	return out
}

package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A Call is a parsed tool call: a function name and its arguments as the text
// of a JSON object.
type Call struct {
	Name      string
	Arguments string
}

const (
	openTag  = "<tool_call>"
	closeTag = "</tool_call>"
	maxCalls = 128
)

// Parse returns the Hermes-style tool calls in text and the text without
// them. A block that is not a valid call is left in the text.
func Parse(text string) (calls []Call, rest string) {
	if !strings.Contains(text, openTag) {
		return nil, text
	}
	var b strings.Builder
	s := text
	for len(calls) < maxCalls {
		i := strings.Index(s, openTag)
		if i < 0 {
			break
		}
		body := s[i+len(openTag):]
		end := strings.Index(body, closeTag)
		next := ""
		if end >= 0 {
			next = body[end+len(closeTag):]
			body = body[:end]
		}
		parsed := parseBody(body)
		if len(parsed) == 0 {
			b.WriteString(s[:i+len(openTag)])
			s = s[i+len(openTag):]
			continue
		}
		b.WriteString(s[:i])
		calls = append(calls, parsed...)
		s = next
		if end < 0 {
			break
		}
	}
	b.WriteString(s)
	return calls, strings.TrimSpace(b.String())
}

// parseBody reads one block: a JSON object, or several (one per line or
// in an array).
func parseBody(body string) []Call {
	body = strings.TrimSpace(body)
	body = strings.TrimPrefix(body, "```json")
	body = strings.TrimPrefix(body, "```")
	body = strings.TrimSuffix(body, "```")
	body = strings.TrimSpace(body)
	if body == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var out []Call
	for dec.More() && len(out) < maxCalls {
		var v any
		if err := dec.Decode(&v); err != nil {
			return out
		}
		switch x := v.(type) {
		case map[string]any:
			if c, ok := FromObject(x); ok {
				out = append(out, c)
			}
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					if c, ok := FromObject(m); ok {
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// FromObject reads a call from a decoded object: {"name", "arguments"} or
// {"function": {"name", "arguments"}}, with arguments as an object or a
// string holding one.
func FromObject(m map[string]any) (Call, bool) {
	if f, ok := m["function"].(map[string]any); ok {
		m = f
	}
	name, _ := m["name"].(string)
	name = strings.TrimSpace(name)
	if !validName(name, "") {
		return Call{}, false
	}
	args, ok := m["arguments"]
	if !ok {
		args = m["parameters"]
	}
	return Call{Name: name, Arguments: NormalizeArguments(args)}, true
}

// NormalizeArguments renders arguments as the text of a JSON object: an
// object is marshalled, a string holding an object is compacted, anything
// else becomes {}.
func NormalizeArguments(args any) string {
	switch a := args.(type) {
	case map[string]any:
		b, err := json.Marshal(a)
		if err == nil {
			return string(b)
		}
	case string:
		var m map[string]any
		if json.Unmarshal([]byte(a), &m) == nil && m != nil {
			b, err := json.Marshal(m)
			if err == nil {
				return string(b)
			}
		}
	}
	return "{}"
}

// ErrNoArgument means the arguments lack the value the tool needs.
var ErrNoArgument = errors.New("missing argument")

func decode(args string) (map[string]any, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	return m, nil
}

// SearchArgs reads the query and limit of search or text_search. limit is 0
// when absent.
func SearchArgs(args string) (query string, limit int, err error) {
	m, err := decode(args)
	if err != nil {
		return "", 0, err
	}
	for _, k := range []string{"query", "q", "queries", "text", "keywords"} {
		// a string is the query as written, commas and all ("Which
		// company, reported by …"); a list of strings is joined
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			query = strings.TrimSpace(s)
			break
		}
		if s := stringsOf(m[k]); len(s) > 0 {
			query = strings.Join(s, " ")
			break
		}
	}
	if strings.TrimSpace(query) == "" {
		return "", 0, fmt.Errorf("query: %w", ErrNoArgument)
	}
	for _, k := range []string{"limit", "k", "top_k", "n"} {
		if n, ok := intOf(m[k]); ok {
			limit = n
			break
		}
	}
	return query, limit, nil
}

// ReadArgs reads the document id of read.
func ReadArgs(args string) (string, error) {
	m, err := decode(args)
	if err != nil {
		return "", err
	}
	for _, k := range []string{"id", "doc_id", "document_id", "item_id", "ids", "doc_ids"} {
		if s := stringsOf(m[k]); len(s) > 0 {
			return s[0], nil
		}
	}
	return "", fmt.Errorf("id: %w", ErrNoArgument)
}

// ReportArgs reads the ranked ids of report_helpful_ids. An empty list is
// valid (nothing helped).
func ReportArgs(args string) ([]string, error) {
	m, err := decode(args)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"ids", "helpful_ids", "doc_ids", "document_ids", "item_ids", "id"} {
		if v, ok := m[k]; ok {
			return stringsOf(v), nil
		}
	}
	return nil, fmt.Errorf("ids: %w", ErrNoArgument)
}

// stringsOf reads a string, a comma-separated string, a number or a list of
// those.
func stringsOf(v any) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	switch x := v.(type) {
	case string:
		for _, p := range strings.Split(x, ",") {
			add(p)
		}
	case json.Number:
		add(x.String())
	case float64:
		add(strconv.FormatFloat(x, 'f', -1, 64))
	case []any:
		for _, e := range x {
			switch e := e.(type) {
			case string:
				add(e)
			case json.Number:
				add(e.String())
			case float64:
				add(strconv.FormatFloat(e, 'f', -1, 64))
			case map[string]any:
				for _, k := range []string{"id", "doc_id", "item_id", "_id"} {
					if s, ok := e[k].(string); ok {
						add(s)
						break
					}
				}
			}
		}
	}
	return out
}

func intOf(v any) (int, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil && n > 0 && n < 1<<31 {
			return int(n), true
		}
		if f, err := x.Float64(); err == nil && f >= 1 && f < 1<<31 {
			return int(f), true
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil && n > 0 {
			return n, true
		}
	}
	return 0, false
}

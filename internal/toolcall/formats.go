package toolcall

import (
	"encoding/json"
	"strings"
)

// The formats below are read from the text of whole replies. Each parser
// keeps text it cannot read as a call in the returned text, so nothing the
// model wrote is lost.

// jsonValues decodes the JSON values at the start of s, one after another,
// skipping whitespace and the separators in sep between them; it returns the
// values and the text after the last one decoded.
func jsonValues(s, sep string) ([]any, string) {
	var out []any
	for len(out) < maxCalls {
		t := strings.TrimLeft(s, " \t\r\n"+sep)
		if t == "" || (t[0] != '{' && t[0] != '[') {
			break
		}
		dec := json.NewDecoder(strings.NewReader(t))
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		out = append(out, v)
		s = t[dec.InputOffset():]
	}
	return out, s
}

// callsOf reads calls from decoded JSON: an object or a list of objects with
// "name" and "arguments" (or "parameters"). ok is false when any element is
// not a call.
func callsOf(vals []any) (calls []Call, ok bool) {
	for _, v := range vals {
		switch x := v.(type) {
		case map[string]any:
			c, ok := FromObject(x)
			if !ok {
				return nil, false
			}
			calls = append(calls, c)
		case []any:
			more, ok := callsOf(x)
			if !ok {
				return nil, false
			}
			calls = append(calls, more...)
		default:
			return nil, false
		}
	}
	return calls, len(calls) > 0
}

// join puts text back together around removed calls.
func join(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}

// xmlValue reads a parameter value of the XML formats: a JSON number,
// boolean, null, object or array is that value; anything else is the text
// itself (the formats write strings unquoted). One newline on each side is
// layout, not value.
func xmlValue(s string) any {
	s = strings.TrimPrefix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	t := strings.TrimSpace(s)
	if t != "" && (t[0] == '{' || t[0] == '[' || t[0] == '-' || (t[0] >= '0' && t[0] <= '9') || t == "true" || t == "false" || t == "null") {
		var v any
		if json.Unmarshal([]byte(t), &v) == nil {
			return v
		}
	}
	return s
}

func argsJSON(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// between returns the text between open and the next close after it, the
// text after close, and whether open was found (an unclosed block runs to
// the end of s).
func between(s, open, close string) (before, inner, after string, ok bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return s, "", "", false
	}
	before, rest := s[:i], s[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return before, rest, "", true
	}
	return before, rest[:j], rest[j+len(close):], true
}

// mistral: [TOOL_CALLS] followed by a JSON list of {"name","arguments"}
// (tokenizer versions before 11), or by name[ARGS]{…} with an optional
// [CALL_ID]id (version 11 on), once per call.
func parseMistral(text string) ([]Call, string) {
	const tag = "[TOOL_CALLS]"
	if !strings.Contains(text, tag) {
		return nil, text
	}
	segs := strings.Split(text, tag)
	rest := []string{segs[0]}
	var calls []Call
	for _, seg := range segs[1:] {
		t := strings.TrimSpace(seg)
		if strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
			vals, after := jsonValues(t, "")
			if cs, ok := callsOf(vals); ok {
				calls = append(calls, cs...)
				rest = append(rest, after)
				continue
			}
		} else if name, args, ok := strings.Cut(t, "[ARGS]"); ok {
			name, _, _ = strings.Cut(name, "[CALL_ID]")
			name = strings.TrimSpace(name)
			vals, after := jsonValues(args, "")
			if m, isObj := first(vals).(map[string]any); isObj && validName(name, "") {
				calls = append(calls, Call{Name: name, Arguments: argsJSON(m)})
				rest = append(rest, after)
				continue
			}
		}
		rest = append(rest, tag+seg)
	}
	if len(calls) == 0 {
		return nil, text
	}
	return calls, join(rest...)
}

func first(vals []any) any {
	if len(vals) == 0 {
		return nil
	}
	return vals[0]
}

// llama3_json: the reply is one or more JSON objects {"name", "parameters"}
// separated by ";", optionally after <|python_tag|>. A reply that does not
// start with a call is text.
func parseLlama3JSON(text string) ([]Call, string) {
	t := strings.TrimSpace(text)
	t = strings.TrimSpace(strings.TrimPrefix(t, "<|python_tag|>"))
	if !strings.HasPrefix(t, "{") {
		return nil, text
	}
	vals, after := jsonValues(t, ";")
	calls, ok := callsOf(vals)
	if !ok {
		return nil, text
	}
	return calls, strings.TrimSpace(after)
}

// granite: <|tool_call|> (or <tool_call>) then a JSON list of calls, at the
// start of the reply.
func parseGranite(text string) ([]Call, string) {
	t := strings.TrimSpace(text)
	t = strings.TrimPrefix(t, "<|tool_call|>")
	t = strings.TrimSpace(strings.TrimPrefix(t, "<tool_call>"))
	if !strings.HasPrefix(t, "[") {
		return nil, text
	}
	dec := json.NewDecoder(strings.NewReader(t))
	var v any
	if dec.Decode(&v) != nil {
		return nil, text
	}
	calls, ok := callsOf([]any{v})
	if !ok {
		return nil, text
	}
	after := strings.TrimSpace(t[dec.InputOffset():])
	return calls, strings.TrimSpace(strings.TrimPrefix(after, "</tool_call>"))
}

// qwen3_xml: <tool_call><function=NAME><parameter=KEY>VALUE</parameter>…
// </function></tool_call>, the <tool_call> wrapper optional.
func parseQwen3XML(text string) ([]Call, string) {
	if !strings.Contains(text, "<function=") {
		return nil, text
	}
	var calls []Call
	var rest []string
	s := text
	for len(calls) < maxCalls {
		before, inner, after, ok := between(s, "<function=", "</function>")
		if !ok {
			break
		}
		name, body, hasBody := strings.Cut(inner, ">")
		name = strings.TrimSpace(name)
		if !hasBody || !validName(name, "<\n") {
			rest = append(rest, before+"<function="+inner)
			s = after
			if after == "" {
				break
			}
			continue
		}
		args := map[string]any{}
		p := body
		for {
			_, pin, pafter, ok := between(p, "<parameter=", "</parameter>")
			if !ok {
				break
			}
			key, val, ok := strings.Cut(pin, ">")
			if key = strings.TrimSpace(key); ok && key != "" {
				args[key] = xmlValue(val)
			}
			p = pafter
		}
		calls = append(calls, Call{Name: name, Arguments: argsJSON(args)})
		before = strings.TrimSpace(before)
		before = strings.TrimSpace(strings.TrimSuffix(before, "<tool_call>"))
		rest = append(rest, before)
		after = strings.TrimSpace(after)
		s = strings.TrimPrefix(after, "</tool_call>")
	}
	if len(calls) == 0 {
		return nil, text
	}
	rest = append(rest, s)
	return calls, join(rest...)
}

// glm45: <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…
// </tool_call>.
func parseGLM45(text string) ([]Call, string) {
	if !strings.Contains(text, "<tool_call>") {
		return nil, text
	}
	var calls []Call
	var rest []string
	s := text
	for len(calls) < maxCalls {
		before, inner, after, ok := between(s, "<tool_call>", "</tool_call>")
		if !ok {
			break
		}
		name, body, _ := strings.Cut(inner, "<arg_key>")
		name = strings.TrimSpace(name)
		if !validName(name, "<>{}\n") {
			rest = append(rest, before+"<tool_call>"+inner+"</tool_call>")
			s = after
			if after == "" {
				break
			}
			continue
		}
		args := map[string]any{}
		p := "<arg_key>" + body
		for {
			_, key, pafter, ok := between(p, "<arg_key>", "</arg_key>")
			if !ok {
				break
			}
			_, val, vafter, ok := between(pafter, "<arg_value>", "</arg_value>")
			if !ok {
				break
			}
			if key = strings.TrimSpace(key); key != "" {
				args[key] = xmlValue(val)
			}
			p = vafter
		}
		calls = append(calls, Call{Name: name, Arguments: argsJSON(args)})
		rest = append(rest, before)
		s = after
	}
	if len(calls) == 0 {
		return nil, text
	}
	rest = append(rest, s)
	return calls, join(rest...)
}

// maxNameLen bounds a function name read from a reply.
const maxNameLen = 256

// validName reports whether name can be a function name: not empty, not
// longer than maxNameLen, and none of the characters in bad (the format's
// own markup).
func validName(name, bad string) bool {
	return name != "" && len(name) <= maxNameLen && !strings.ContainsAny(name, bad)
}

// sectionFormat is a format of special tokens: a section between begin and
// end holding calls, each between callBegin and callEnd; split reads one
// call's inner text into its name and its JSON arguments.
type sectionFormat struct {
	begin, end, callBegin, callEnd string
	split                          func(inner string) (name, args string, ok bool)
}

// parse reads the calls of the first section. A call it cannot read is
// dropped (special tokens are never text); the text around the section is
// kept.
func (f sectionFormat) parse(text string) ([]Call, string) {
	before, section, after, ok := between(text, f.begin, f.end)
	if !ok {
		return nil, text
	}
	var calls []Call
	s := section
	for len(calls) < maxCalls {
		_, inner, next, ok := between(s, f.callBegin, f.callEnd)
		if !ok {
			break
		}
		s = next
		name, args, ok := f.split(inner)
		if !ok {
			continue
		}
		vals, _ := jsonValues(args, "")
		if m, isObj := first(vals).(map[string]any); isObj && validName(name, "") {
			calls = append(calls, Call{Name: name, Arguments: argsJSON(m)})
		}
	}
	if len(calls) == 0 {
		return nil, text
	}
	return calls, join(before, after)
}

// deepseek_v3: <｜tool▁calls▁begin｜> then, per call,
// <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
// (V3), or <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
// (V3.1), then <｜tool▁calls▁end｜>.
var deepSeekV3 = sectionFormat{
	begin: "<｜tool▁calls▁begin｜>", end: "<｜tool▁calls▁end｜>",
	callBegin: "<｜tool▁call▁begin｜>", callEnd: "<｜tool▁call▁end｜>",
	split: func(inner string) (string, string, bool) {
		head, tail, ok := strings.Cut(inner, "<｜tool▁sep｜>")
		if !ok {
			return "", "", false
		}
		name, args := strings.TrimSpace(head), tail
		if n, body, fenced := strings.Cut(tail, "```"); fenced && (name == "function" || name == "") {
			name = strings.TrimSpace(n)
			body = strings.TrimPrefix(body, "json")
			args, _, _ = strings.Cut(body, "```")
		}
		return name, args, true
	},
}

// kimi_k2: <|tool_calls_section_begin|> then, per call,
// <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>ARGS<|tool_call_end|>,
// then <|tool_calls_section_end|>.
var kimiK2 = sectionFormat{
	begin: "<|tool_calls_section_begin|>", end: "<|tool_calls_section_end|>",
	callBegin: "<|tool_call_begin|>", callEnd: "<|tool_call_end|>",
	split: func(inner string) (string, string, bool) {
		id, args, ok := strings.Cut(inner, "<|tool_call_argument_begin|>")
		if !ok {
			return "", "", false
		}
		name := strings.TrimSpace(id)
		if i := strings.LastIndexByte(name, ':'); i >= 0 && allDigits(name[i+1:]) {
			name = name[:i]
		}
		return strings.TrimPrefix(name, "functions."), args, true
	},
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

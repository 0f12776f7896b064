package toolcall

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pythonic: the reply is a Python list of calls with keyword arguments,
// [get_weather(city="Paris", days=3), search(query='x')], optionally
// between <|python_start|> and <|python_end|> (Llama 4). Arguments are
// Python literals: strings, numbers, True/False/None, lists, tuples and
// dicts. A reply that is not such a list is text.
func parsePythonic(text string) ([]Call, string) {
	t := strings.TrimSpace(text)
	t = strings.TrimPrefix(t, "<|python_start|>")
	t = strings.TrimSuffix(strings.TrimSpace(t), "<|python_end|>")
	t = strings.TrimSpace(t)
	if !strings.HasPrefix(t, "[") {
		return nil, text
	}
	p := &pyParser{s: t}
	calls, err := p.calls()
	if err != nil || len(calls) == 0 {
		return nil, text
	}
	return calls, strings.TrimSpace(p.s[p.i:])
}

type pyParser struct {
	s     string
	i     int
	depth int
}

var errPy = errors.New("not a pythonic tool call list")

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) ident() string {
	p.space()
	start := p.i
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if r == '_' || unicode.IsLetter(r) || (p.i > start && (unicode.IsDigit(r) || r == '.' || r == '-')) {
			p.i += n
			continue
		}
		break
	}
	return p.s[start:p.i]
}

// calls reads [call, call, …].
func (p *pyParser) calls() ([]Call, error) {
	if !p.eat('[') {
		return nil, errPy
	}
	var out []Call
	for len(out) < maxCalls {
		if p.eat(']') {
			return out, nil
		}
		if len(out) > 0 && !p.eat(',') {
			return nil, errPy
		}
		name := p.ident()
		if !validName(name, "") || !p.eat('(') {
			return nil, errPy
		}
		args := map[string]any{}
		for {
			if p.eat(')') {
				break
			}
			if len(args) > 0 && !p.eat(',') {
				return nil, errPy
			}
			if p.eat(')') { // trailing comma
				break
			}
			key := p.ident()
			if key == "" || !p.eat('=') {
				return nil, errPy
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			args[key] = v
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, errPy
		}
		out = append(out, Call{Name: name, Arguments: string(b)})
	}
	return nil, errPy
}

// value reads one Python literal as a JSON-encodable value.
func (p *pyParser) value() (any, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 64 {
		return nil, errPy
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, errPy
	}
	switch c := p.s[p.i]; {
	case c == '"' || c == '\'':
		return p.str()
	case c == '[' || c == '(':
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		p.i++
		list := []any{}
		for {
			if p.eat(closer) {
				return list, nil
			}
			if len(list) > 0 && !p.eat(',') {
				return nil, errPy
			}
			if p.eat(closer) {
				return list, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
	case c == '{':
		p.i++
		m := map[string]any{}
		for {
			if p.eat('}') {
				return m, nil
			}
			if len(m) > 0 && !p.eat(',') {
				return nil, errPy
			}
			if p.eat('}') {
				return m, nil
			}
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			if !p.eat(':') {
				return nil, errPy
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			switch k := k.(type) {
			case string:
				m[k] = v
			case float64:
				m[strconv.FormatFloat(k, 'f', -1, 64)] = v
			default:
				return nil, errPy
			}
		}
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-_", p.s[p.i]) >= 0 {
			p.i++
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(p.s[start:p.i], "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errPy
		}
		return f, nil
	default:
		switch p.ident() {
		case "True", "true":
			return true, nil
		case "False", "false":
			return false, nil
		case "None", "null":
			return nil, nil
		}
		return nil, errPy
	}
}

// str reads a quoted Python string with its escapes.
func (p *pyParser) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\' && p.i+1 < len(p.s):
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'u':
				if p.i+4 <= len(p.s) {
					if n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32); err == nil {
						b.WriteRune(rune(n))
						p.i += 4
						continue
					}
				}
				return "", errPy
			default:
				b.WriteByte(e) // \\ \' \" and anything else: the character itself
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", errPy
}

package toolresult

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A flat result is the common shape of a search tool's result: a JSON array
// of objects whose values are strings, numbers, booleans or null
// ([{"id":"d1","title":"…","content":"…","score":0.5}]). The svc-1 engine
// reads every tool message of the conversation again on each turn, so this
// shape, and one such object alone (a read tool's {"id":"d1","content":"…"}),
// is read by a scanner that builds no generic JSON values. It gives exactly
// what the general reader (fromJSON over encoding/json's values) gives, and
// declines (ok false) anything else: nested values, other elements, invalid
// JSON, more than maxHits objects.

// A field is one key and its value: a string's text, a number's literal, or
// absent (true, false, null: no field reads them).
type field struct {
	key, val string
	num, set bool
}

// parseFlat reads s when it is a flat result.
func parseFlat(s string) (hits []Hit, ok bool) {
	p := flatScanner{s: s}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '{' { // one object
		fields, ok := p.object(nil)
		if !ok || !p.end() {
			return nil, false
		}
		if h, ok := flatHit(fields); ok {
			hits = append(hits, h)
		}
		return hits, true
	}
	if !p.eat('[') {
		return nil, false
	}
	var fields []field
	p.ws()
	if p.eat(']') {
		return hits, p.end()
	}
	for {
		if len(hits) >= maxHits {
			return nil, false
		}
		p.ws()
		fields, ok = p.object(fields[:0])
		if !ok {
			return nil, false
		}
		if h, ok := flatHit(fields); ok {
			hits = append(hits, h)
		}
		p.ws()
		if p.eat(']') {
			return hits, p.end()
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// object reads an object of scalar values into fields.
func (p *flatScanner) object(fields []field) ([]field, bool) {
	if !p.eat('{') {
		return nil, false
	}
	p.ws()
	if p.eat('}') {
		return fields, true
	}
	for {
		p.ws()
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if !p.eat(':') {
			return nil, false
		}
		p.ws()
		f, ok := p.value()
		if !ok {
			return nil, false
		}
		f.key = k
		fields = append(fields, f)
		p.ws()
		if p.eat('}') {
			return fields, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// flatHit is hitOf for an object of fields: a key given twice counts by its
// last value, as in a decoded map.
func flatHit(fields []field) (Hit, bool) {
	get := func(k string) (field, bool) {
		for i := len(fields) - 1; i >= 0; i-- {
			if fields[i].key == k {
				return fields[i], true
			}
		}
		return field{}, false
	}
	first := func(keys []string) string {
		for _, k := range keys {
			f, ok := get(k)
			if !ok || !f.set {
				continue
			}
			if f.num || strings.TrimSpace(f.val) != "" {
				return f.val
			}
		}
		return ""
	}
	h := Hit{ID: cleanID(first(idKeys)), Text: first(textKeys), Title: first(titleKeys)}
	if h.ID == "" {
		return Hit{}, false
	}
	for _, k := range scoreKeys {
		if f, ok := get(k); ok && f.set && f.num {
			if v, err := json.Number(f.val).Float64(); err == nil {
				h.Score = v
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

type flatScanner struct {
	s string
	i int
}

func (p *flatScanner) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *flatScanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end says whether only JSON white space is left.
func (p *flatScanner) end() bool {
	p.ws()
	return p.i == len(p.s)
}

// str reads a JSON string. One without escapes and in valid UTF-8 is a
// slice of the input; unquote decodes the others.
func (p *flatScanner) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start, plain := p.i, true
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			raw := p.s[start:p.i]
			p.i++
			if plain && utf8.ValidString(raw) {
				return raw, true
			}
			return unquote(raw)
		case c == '\\':
			plain = false
			p.i += 2
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
	return "", false
}

// unquote decodes the inside of a JSON string as encoding/json does: the
// escapes \" \\ \/ \b \f \n \r \t and \uXXXX (a surrogate pair is one
// rune; a lone surrogate, and a byte that is not UTF-8, is U+FFFD); any
// other escape, or a control character, is invalid. Written out because
// the engine reads every earlier tool message on each turn and
// encoding/json's Unmarshal validates and decodes through reflection.
func unquote(raw string) (string, bool) {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 >= len(raw) {
				return "", false
			}
			switch e := raw[i+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(raw[i+2:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := hex4u(raw[i:]); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
							b.WriteRune(d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b.WriteRune(r)
				continue
			default:
				return "", false
			}
			i += 2
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			b.WriteRune(r) // an invalid byte gives RuneError, U+FFFD
			i += size
		}
	}
	return b.String(), true
}

// hex4 reads four hex digits at the start of s, or gives -1.
func hex4(s string) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// hex4u reads a \uXXXX escape at the start of s, or gives -1.
func hex4u(s string) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	return hex4(s[2:])
}

// value reads a string, a number, true, false or null.
func (p *flatScanner) value() (field, bool) {
	if p.i >= len(p.s) {
		return field{}, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		v, ok := p.str()
		return field{val: v, set: true}, ok
	case c == '-' || c >= '0' && c <= '9':
		v, ok := p.number()
		return field{val: v, num: true, set: true}, ok
	}
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(p.s[p.i:], lit) {
			p.i += len(lit)
			return field{}, true
		}
	}
	return field{}, false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *flatScanner) number() (string, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	p.eat('-')
	if p.eat('0') {
		// a leading zero stands alone
	} else if digits() == 0 {
		return "", false
	}
	if p.eat('.') && digits() == 0 {
		return "", false
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			return "", false
		}
	}
	return p.s[start:p.i], true
}

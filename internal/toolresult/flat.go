package toolresult

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A flat result is the common shape of a search tool's result: a JSON array
// of objects whose values are strings, numbers, booleans or null
// ([{"id":"d1","title":"…","content":"…","score":0.5}]). The svc-1 engine
// reads every tool message of the conversation again on each turn, so this
// shape is read by a scanner that builds no generic JSON values. It gives
// exactly what the general reader (fromJSON over encoding/json's values)
// gives, and declines (ok false) anything else: nested values, other
// elements, invalid JSON, more than maxHits objects.

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
		fields = fields[:0]
		p.ws()
		if !p.eat('{') {
			return nil, false
		}
		p.ws()
		if !p.eat('}') {
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
					break
				}
				if !p.eat(',') {
					return nil, false
				}
			}
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
// slice of the input; encoding/json decodes the others.
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
			var v string
			if json.Unmarshal([]byte(p.s[start-1:p.i]), &v) != nil {
				return "", false
			}
			return v, true
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

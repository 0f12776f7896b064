package builtin

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of in on at to for from by with and or but not no is are was were be been being am
		do does did has have had having what which who whom whose where when why how that this these those there here it its
		as than then so such into onto about over under after before between both either neither each any all some same
		other another more most less least very can could would should will shall may might must also only just same
		he she they them his her their him we us our you your i me my name named called film movie person one two
		s t did does whether known born located`) {
		m[w] = true
	}
	return m
}()

// terms returns the lower-cased content words of s, without stop words.
func terms(s string) []string {
	var out []string
	for _, w := range words(s) {
		lw := strings.ToLower(w)
		if len(lw) < 2 && !isDigits(lw) || stopwords[lw] {
			continue
		}
		out = append(out, lw)
	}
	return out
}

// words splits s into runs of letters and digits (apostrophes and inner
// hyphens kept out).
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// eachWord calls f with each word of s, as words(s) splits them, without
// building the list.
func eachWord(s string, f func(string)) {
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f(s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		f(s[start:])
	}
}

// lower is strings.ToLower(s), written out for the texts of the documents
// seen, which the engine lower-cases on every turn: strings.ToLower maps
// a text with any non-ASCII character (a curly quote, "…") rune by rune
// through a function value; this loop copies ASCII bytes directly and
// maps only the other runes (an invalid byte becomes U+FFFD, as there).
func lower(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(unicode.ToLower(r)) // RuneError for an invalid byte
		i += size
	}
	return b.String()
}

func isDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return s != ""
}

// quoted returns the phrases in double quotes (straight or curly).
func quoted(s string) []string {
	var out []string
	for _, pair := range [][2]string{{`"`, `"`}, {"“", "”"}} {
		rest := s
		for {
			i := strings.Index(rest, pair[0])
			if i < 0 {
				break
			}
			rest = rest[i+len(pair[0]):]
			j := strings.Index(rest, pair[1])
			if j < 0 {
				break
			}
			if p := strings.TrimSpace(rest[:j]); p != "" && len(p) < 200 {
				out = append(out, p)
			}
			rest = rest[j+len(pair[1]):]
		}
	}
	return out
}

// connectors may sit inside a name ("Bank of America", "The Lord of the Rings").
var connectors = map[string]bool{"of": true, "the": true, "de": true, "la": true, "von": true, "van": true, "and": true, "for": true, "&": true, "du": true, "der": true, "del": true}

// entities returns capitalised spans (names, titles) and identifier-like
// tokens of s, longest first in order of appearance. The first word of a
// sentence counts only when the next word is capitalised too, or it is not a
// stop word.
func entities(s string) []string {
	toks := tokenize(s)
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(toks); {
		t := toks[i]
		if !t.cap && !t.ident {
			i++
			continue
		}
		j := i + 1
		end := i + 1
		for j < len(toks) {
			if toks[j].cap || toks[j].ident {
				j++
				end = j
				continue
			}
			if connectors[strings.ToLower(toks[j].text)] && j+1 < len(toks) && toks[j+1].cap && !toks[j].breakBefore {
				j++
				continue
			}
			break
		}
		span := toks[i:end]
		// drop a leading stop word at a sentence start ("The", "What", "Which")
		for len(span) > 0 && stopwords[strings.ToLower(span[0].text)] {
			span = span[1:]
		}
		if len(span) > 0 {
			parts := make([]string, len(span))
			for k, tk := range span {
				parts[k] = tk.text
			}
			e := strings.Join(parts, " ")
			if k := strings.ToLower(e); !seen[k] && (len(span) > 1 || len(e) > 2) {
				seen[k] = true
				out = append(out, e)
			}
		}
		i = end
	}
	return out
}

type token struct {
	text        string
	cap         bool // starts with an upper-case letter
	ident       bool // has digits mixed with letters, or inner upper case (iPhone, X11)
	breakBefore bool // punctuation (not a space) before it
}

func tokenize(s string) []token {
	var out []token
	brk := true
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := s[start:end]
		r, _ := utf8.DecodeRuneInString(w)
		t := token{text: w, cap: unicode.IsUpper(r), breakBefore: brk}
		hasDigit, hasLetter := false, false
		for _, c := range w {
			hasDigit = hasDigit || unicode.IsDigit(c)
			hasLetter = hasLetter || unicode.IsLetter(c)
		}
		t.ident = hasDigit && hasLetter || (len(w) >= 4 && isDigits(w))
		out = append(out, t)
		start = -1
		brk = false
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || (r == '\'' || r == '-' || r == '.') && start >= 0 && i+1 < len(s) && isWordByte(s[i+1]) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
		if !unicode.IsSpace(r) {
			brk = true
		}
	}
	flush(len(s))
	return out
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// normQuery is the key a query is remembered by.
func normQuery(q string) string {
	return strings.Join(strings.Fields(strings.ToLower(q)), " ")
}

// leadTitle finds a title that a hit's text starts with when the backend gave
// none: encyclopedic passages stored as "title text" repeat the title's words
// at the start of their first sentence ("Ed Wood (film) Ed Wood is a 1994
// film", "Irish Home Rule movement The Irish Home Rule movement was"). It
// takes the longest lead of at most 12 words whose words (bar a bracketed
// disambiguation or what follows a comma) all come back within the next few words, the first of them
// within three; it returns "" when the text does not have that shape.
func leadTitle(text string) string {
	def, _ := definedLead(text)
	return leadTitleOf(text, def)
}

// leadTitleOf is leadTitle given the text's definedLead.
func leadTitleOf(text, def string) string {
	if len(text) > 400 {
		text = text[:400]
	}
	f := fieldsN(text, 28) // a lead of n ≤ 12 words and the 2n+4 after it
	if len(f) < 2 {
		return ""
	}
	if r, _ := utf8.DecodeRuneInString(f[0]); !unicode.IsUpper(r) && !unicode.IsDigit(r) {
		return ""
	}
	bare := make([]string, len(f))
	for i, w := range f {
		bare[i] = bareWord(w)
	}
	best := 0
	for n := 1; n <= 12 && n < len(f); n++ {
		if endsSentence(f[n-1]) {
			break
		}
		if last := bare[n-1]; n > 1 && (last == bare[0] || connectors[last] || last == "a" || last == "an") {
			continue // "Impresario An", "Circus Circus Las Vegas Circus"
		}
		if restarts(bare[:n]) {
			continue // "Kam Heskin Kam Heskin"
		}
		rest := bare[n:min(len(f), 2*n+4)]
		if !slices.Contains(rest[:min(3, len(rest))], bare[0]) {
			continue
		}
		ok, inParen := true, false
		for _, w := range f[:n] {
			if strings.HasPrefix(w, "(") {
				inParen = true
			}
			if !inParen && !slices.Contains(rest, bareWord(w)) {
				ok = false
				break
			}
			if strings.HasSuffix(w, ")") {
				inParen = false
			}
			if strings.HasSuffix(w, ",") { // "Kaiyuan, Liaoning": the place may stay unsaid
				inParen = true
			}
		}
		if ok {
			best = n
		}
	}
	// "Rakesh Roshan( born Rakesh Roshan Lal Nagrath …": the bracket that
	// opens on the last word is not the title's
	lead := strings.TrimRight(strings.Join(f[:best], " "), "(")
	if lead != "" && !titleThenText(lead, def) {
		// "Hugo Gernsback (born Hugo Gernsbacher) was an …", "The View
		// from the Bottom is the fifth album by …": a definition, whose
		// words come back by chance, not a title before its text
		return ""
	}
	return lead
}

// titleThenText says whether a text's lead and its definition (definedLead,
// "" when it has none) show a title before its text: no definition, one of
// the lead itself, or one of the lead followed by its first word again
// ("Paris Paris is a city").
func titleThenText(lead, def string) bool {
	if def == "" || def == lead {
		return true
	}
	rest, ok := strings.CutPrefix(def, lead+" ")
	first, _, _ := strings.Cut(lead, " ")
	return ok && strings.HasPrefix(rest+" ", first+" ")
}

// fieldsN is strings.Fields(s) up to its first n fields.
func fieldsN(s string, n int) []string {
	out := make([]string, 0, n)
	start := -1
	for i, r := range s {
		if !unicode.IsSpace(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
			if len(out) == n {
				return out
			}
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// restarts says whether the words begin again inside: two words that start
// them come back.
func restarts(words []string) bool {
	for i := 1; i+1 < len(words); i++ {
		if words[i] == words[0] && words[i+1] == words[1] {
			return true
		}
	}
	return false
}

// endsSentence says whether w ends a sentence or a speaker's label.
func endsSentence(w string) bool {
	return strings.HasSuffix(w, ":") || strings.HasSuffix(w, "!") || strings.HasSuffix(w, "?") || strings.HasSuffix(w, ".") && len(w) > 4
}

// bareWord is w lower-cased, without surrounding quotes and punctuation or a
// possessive "'s".
func bareWord(w string) string {
	w = strings.ToLower(strings.Trim(w, "\"“”'‘’,.;:!?()"))
	return strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
}

// speaker returns the label of a chat turn ("Melanie: I went camping" gives
// "Melanie"): one to three capitalised words before a colon at the start.
func speaker(text string) string {
	i := strings.IndexByte(text, ':')
	if i <= 0 || i > 40 {
		return ""
	}
	label := strings.TrimSpace(text[:i])
	ws := strings.Fields(label)
	if len(ws) == 0 || len(ws) > 3 {
		return ""
	}
	for _, w := range ws {
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsUpper(r) {
			return ""
		}
		for _, c := range w {
			if !unicode.IsLetter(c) && c != '-' && c != '.' && c != '\'' {
				return ""
			}
		}
	}
	return label
}

// containsWord says whether s has w as a whole word (or words).
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(s[:j])
		after, _ := utf8.DecodeRuneInString(s[j+len(w):])
		if (j == 0 || !unicode.IsLetter(before) && !unicode.IsDigit(before)) && (j+len(w) == len(s) || !unicode.IsLetter(after) && !unicode.IsDigit(after)) {
			return true
		}
		i = j + len(w)
	}
}

package builtin

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Aliases: a name and its short form, linked from the text seen. A
// question may name "Sam Bankman-Fried" where a document writes "SBF", or
// ask about "the FTC" where a document writes "Federal Trade Commission";
// neither a keyword search for one form nor the term coverage of the
// question finds the other. The engine links a short form to a name when
// the short form is the name's initials: the first letter of each word and
// of each part of a hyphenated word, connectors left out ("Securities and
// Exchange Commission" for "SEC"), of three to six letters, written in
// capitals as a word of its own. One form must be in the question and the
// other in a document seen. A linked form is searched by keyword on the
// next hop, and a document that holds the other form counts as holding the
// question's form (its terms) in the coverage of the question.

// An alias is a name and its short form, and which of them the question
// uses.
type alias struct {
	long, short string
	shortInQ    bool // the question writes the short form
}

// initials returns the initials of a name written with capitals ("Sam
// Bankman-Fried" gives "SBF"), or "" when a word other than a connector
// does not start with a capital.
func initials(name string) string {
	var b strings.Builder
	for _, w := range strings.Fields(name) {
		if connectors[strings.ToLower(w)] {
			continue
		}
		for _, part := range strings.Split(w, "-") {
			r, _ := utf8.DecodeRuneInString(part)
			if !unicode.IsUpper(r) {
				return ""
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isShortForm says whether w is written as a short form: three to six
// capital letters.
func isShortForm(w string) bool {
	if len(w) < 3 || len(w) > 6 {
		return false
	}
	for _, r := range w {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// hasShortWord says whether text holds w as a word written as it is (a
// short form is matched in capitals only: "SEC" is not "sec").
func hasShortWord(text, w string) bool { return containsWord(text, w) }

// shortForms of a text: the names among its candidates (up to 4,000 bytes:
// a short form is defined near its first use) by their initials, the first
// name for each.
func shortFormsOf(text string) map[string]string {
	if len(text) > 4000 {
		text = text[:4000]
		for len(text) > 0 && !utf8.RuneStart(text[len(text)-1]) {
			text = text[:len(text)-1]
		}
	}
	out := map[string]string{}
	for _, c := range candidates(text) {
		if c.kind != candName {
			continue
		}
		if s := initials(c.text); isShortForm(s) && s != c.text {
			if _, ok := out[s]; !ok {
				out[s] = c.text
			}
		}
	}
	return out
}

// findAliases links the question's names and short forms to the other form
// in the documents seen, in the order first seen.
func (st *state) findAliases() []alias {
	var out []alias
	seen := map[string]bool{}
	// names of the question whose short form a document writes
	for _, n := range entities(st.question) {
		s := initials(n)
		if !isShortForm(s) || s == n || seen[s] || containsWord(st.question, s) {
			continue
		}
		for _, id := range st.order {
			if hasShortWord(st.docs[id].text, s) {
				seen[s] = true
				out = append(out, alias{long: n, short: s})
				break
			}
		}
	}
	// short forms of the question whose name a document writes
	for _, w := range words(st.question) {
		if !isShortForm(w) || seen[w] {
			continue
		}
		for _, id := range st.order {
			if long, ok := st.memo.shortForms(st.docs[id].text)[w]; ok && !containsWord(st.qlow, strings.ToLower(long)) {
				seen[w] = true
				out = append(out, alias{long: long, short: w, shortInQ: true})
				break
			}
		}
	}
	return out
}

// form is the form of a the question uses, other the one it does not.
func (a alias) form() string {
	if a.shortInQ {
		return a.short
	}
	return a.long
}

func (a alias) other() string {
	if a.shortInQ {
		return a.long
	}
	return a.short
}

// aliasKey is what the question's aliases add to the key of a document's
// term flags.
func aliasKey(as []alias) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString("\x01" + a.long + "\x02" + a.short)
		if a.shortInQ {
			b.WriteByte('s')
		}
	}
	return b.String()
}

// markAliases sets in has the question's terms of each alias whose other
// form d holds.
func (st *state) markAliases(d *doc, has []bool) {
	for _, a := range st.aliases {
		var held bool
		if a.shortInQ {
			held = containsWord(d.low, strings.ToLower(a.long))
		} else {
			held = hasShortWord(d.text, a.short)
		}
		if !held {
			continue
		}
		for _, t := range terms(a.form()) {
			if i, ok := st.qidx[t]; ok {
				has[i] = true
			}
		}
	}
}

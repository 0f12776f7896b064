package builtin

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kinds of bridge candidates, by what the text shows of them.
const (
	candName   = iota // a proper-noun phrase or an identifier
	candQuoted        // a quoted string ("Changed It")
	candNumber        // a date or number (a year, "1,173,135")
)

// A candSpan is one candidate bridge in a text, at its byte offsets.
type candSpan struct {
	text       string
	kind       int
	start, end int
}

// candidates returns the spans of s that can carry a chain to the next
// document: proper-noun phrases and identifiers (a number is never part of a
// name here: "1994 American" gives "1994" and "American"), quoted strings,
// and dates and numbers, in order of appearance.
func candidates(s string) []candSpan { return candidatesAt(s, tokenizeAt(s)) }

// candidatesAt is candidates over s's tokens, toks (tokenizeAt(s)).
func candidatesAt(s string, toks []tokenAt) []candSpan {
	var out []candSpan
	for i := 0; i < len(toks); {
		t := toks[i]
		if isDigits(strings.ReplaceAll(t.text, ",", "")) {
			if len(t.text) >= 3 {
				out = append(out, candSpan{t.text, candNumber, t.start, t.end})
			}
			i++
			continue
		}
		if !t.cap && !t.ident {
			i++
			continue
		}
		j, end := i+1, i+1
		for j < len(toks) {
			if isDigits(toks[j].text) || toks[j].breakBefore && breaksName(s[toks[j-1].end:toks[j].start]) {
				break
			}
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
		for len(span) > 0 && stopwords[strings.ToLower(span[0].text)] {
			span = span[1:]
		}
		if len(span) > 0 {
			text := s[span[0].start:span[len(span)-1].end]
			if len(span) > 1 || len(text) > 2 {
				out = append(out, candSpan{text, candName, span[0].start, span[len(span)-1].end})
			}
		}
		i = end
	}
	for _, pair := range [][2]string{{`"`, `"`}, {"“", "”"}} {
		off := 0
		for {
			i := strings.Index(s[off:], pair[0])
			if i < 0 {
				break
			}
			a := off + i + len(pair[0])
			j := strings.Index(s[a:], pair[1])
			if j < 0 {
				break
			}
			if p := strings.TrimSpace(s[a : a+j]); p != "" && len(p) < 120 && len(strings.Fields(p)) <= 12 {
				out = append(out, candSpan{p, candQuoted, a, a + j})
			}
			off = a + j + len(pair[1])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// breaksName says whether the characters between two capitalised words end
// a name (a comma, a full stop, a bracket): "Paris, France" is two places.
func breaksName(between string) bool {
	return strings.ContainsAny(between, ",.;:()[]\"“”!?")
}

// tokenAt is a token with its byte offsets.
type tokenAt struct {
	token
	start, end int
}

// tokenizeAt is tokenize with each token's offsets in s.
func tokenizeAt(s string) []tokenAt {
	toks := tokenize(s)
	out := make([]tokenAt, 0, len(toks))
	off := 0
	for _, t := range toks {
		i := strings.Index(s[off:], t.text)
		if i < 0 {
			break
		}
		out = append(out, tokenAt{t, off + i, off + i + len(t.text)})
		off += i + len(t.text)
	}
	return out
}

// leadEntity is the subject a text starts with when it has no title: the
// first name among its first three words ("Ed Wood is a 1994 American
// film" gives "Ed Wood"), or "". When the text starts with that name and
// defines it ("Una storia d'amore is a 1942 Italian film", "Men with
// Brooms is a 2002 comedy", "Brutti di notte (literally …) is a"), the
// subject is the whole phrase the definition is of (definedLead).
func leadEntity(text string) string {
	def, _ := definedLead(text)
	return leadEntityOf(text, def)
}

// leadEntityOf is leadEntity given the text's definedLead.
func leadEntityOf(text, def string) string {
	if len(text) > 300 {
		text = text[:300]
	}
	toks := tokenizeAt(text)
	if len(toks) < 2 {
		return ""
	}
	limit := toks[min(3, len(toks)-1)].start
	for _, c := range candidatesAt(text, toks) {
		if c.start > limit {
			break
		}
		if c.kind == candName && len(terms(c.text)) > 0 {
			if strings.Contains(def, c.text) {
				return def
			}
			return c.text
		}
	}
	return ""
}

// definedLead is the phrase a definitional first sentence is of: the words
// before "is a", "was an", "are the", "were 12 …" (a copula followed by an
// article or a number), leaving out a bracket right before it ("Brutti di
// notte( literally "Ugly by night") is a 1968 comedy" gives "Brutti di
// notte"). The phrase starts with a capital or a digit, has at most eight
// words, no comma or sentence end, and no word that reports or narrates
// ("Marta said the router is a mess", "Jon repaired the unit was a …"): a
// title keeps its lower-case words ("Les films du losange"), a sentence's
// verb is not part of its subject. It returns "" for any other shape. A
// quoted nickname is left out of the phrase and given as the name the
// subject goes by: Samuel Timothy "Tim" McGraw is "Samuel Timothy McGraw",
// nick "Tim McGraw".
func definedLead(text string) (phrase, nick string) {
	f := fieldsN(text, 40)
	if len(f) < 3 {
		return "", ""
	}
	if r, _ := utf8.DecodeRuneInString(f[0]); !unicode.IsUpper(r) && !unicode.IsDigit(r) {
		return "", ""
	}
	var span []string
	depth := 0      // brackets open
	closed := false // a bracket after the phrase closed: the copula must follow
	quoted := false // inside a quoted nickname
	var nicks []string
	for i := 0; i+1 < len(f) && i <= 30; i++ {
		w := f[i]
		if depth > 0 {
			if depth += strings.Count(w, "(") - strings.Count(w, ")"); depth <= 0 {
				depth, closed = 0, true
			}
			continue
		}
		switch {
		case len(span) > 0 && copulas[bareWord(w)] && !strings.ContainsAny(w, "()"):
			next := bareWord(f[i+1])
			if r, _ := utf8.DecodeRuneInString(next); next == "a" || next == "an" || next == "the" || unicode.IsDigit(r) {
				return joinLead(span), nickname(nicks, span)
			}
			return "", ""
		case len(span) > 0 && otherName[w]:
			// "Richard Blund or Richard Blundy was", "Ming Luhulima aka
			// Lou Lima": the first name is the subject
			return joinLead(span), nickname(nicks, span)
		case closed: // "Ronald Coleman (born 1973), better known as"
			return "", ""
		}
		head, opens := w, false
		if j := strings.IndexByte(w, '('); j >= 0 { // "notte( literally"
			head, opens = strings.TrimRight(w[:j], ",;:"), true
			if depth = strings.Count(w, "(") - strings.Count(w, ")"); depth <= 0 {
				depth, closed = 0, true
			}
		}
		if head == "" {
			continue
		}
		if len(span) > 0 && (sentenceStart[head] || repeats(span, head)) {
			// "Bruce Islands The Bruce Islands are", "Cheech Marin Richard
			// Anthony Marin (born": a title before its text, not a
			// definition's phrase
			return "", ""
		}
		if len(span) == 8 || narrates(head) ||
			!opens && (strings.HasSuffix(head, ",") || strings.HasSuffix(head, ";") || endsSentence(head) && !isInitial(head)) {
			return "", ""
		}
		// a nickname is not part of the name: Amir "The Sphinx" Zeyada
		opening := strings.HasPrefix(head, "\"") || strings.HasPrefix(head, "“")
		shut := strings.TrimRight(head, ",;:.!?")
		closing := len(shut) > 1 && (strings.HasSuffix(shut, "\"") || strings.HasSuffix(shut, "”"))
		quoted = quoted || opening
		if !quoted {
			span = append(span, head)
		} else if len(span) > 0 {
			nicks = append(nicks, strings.Trim(head, "\"“”,"))
		}
		quoted = quoted && !closing
	}
	return "", ""
}

// sentenceStart are capitalised words that start a sentence rather than
// continue a name.
var sentenceStart = map[string]bool{"The": true, "A": true, "An": true, "This": true, "It": true, "He": true, "She": true, "They": true, "In": true, "On": true, "At": true}

// repeats says whether w is one of span's words again (bar connectors):
// a name does not repeat its words ("Circus Circus Las Vegas" aside).
func repeats(span []string, w string) bool {
	b := bareWord(w)
	if connectors[b] || len(b) < 2 {
		return false
	}
	for _, s := range span {
		if bareWord(s) == b {
			return true
		}
	}
	return false
}

// nickname is a quoted nickname with the name's last word ("Tim McGraw"),
// or "".
func nickname(nicks, span []string) string {
	if len(nicks) == 0 || len(span) < 2 {
		return ""
	}
	return strings.Join(nicks, " ") + " " + strings.TrimSuffix(span[len(span)-1], ".")
}

// joinLead joins a defined phrase's words without a leading article ("The
// Irish Home Rule movement" is named "Irish Home Rule movement" as often as
// not) or the full stop of an abbreviation that ends it ("Daniel Gibson
// Sr.").
func joinLead(span []string) string {
	if len(span) > 1 && (span[0] == "The" || span[0] == "A" || span[0] == "An") {
		span = span[1:]
	}
	return strings.TrimSuffix(strings.Join(span, " "), ".")
}

// otherName are the words that join a subject's other name to it.
var otherName = map[string]bool{"or": true, "aka": true, "a.k.a.": true, "alias": true, "later": true, "born": true, "née": true, "formerly": true, "also": true, "known": true}

// copulas are the verbs a definition is stated with.
var copulas = map[string]bool{"is": true, "was": true, "are": true, "were": true}

// narrates says whether a lower-case word of a sentence's start is a verb
// that reports or narrates (a past form in -ed, or a common verb of
// saying, thinking or doing): such a sentence does not define its opening
// words.
func narrates(w string) bool {
	if r, _ := utf8.DecodeRuneInString(w); !unicode.IsLower(r) {
		return false
	}
	b := bareWord(w)
	return len(b) > 4 && strings.HasSuffix(b, "ed") || narrative[b]
}

// narrative are common verbs of saying, thinking and doing that do not end
// in -ed.
var narrative = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`said says say thinks think thought told tells tell knows know knew
		believes believe feels feel felt hopes hope wants want wrote writes write asks ask noted notes
		agrees agree claims claim reports report mentions mention found finds find explains explain
		saw sees see heard hears hear made makes make took takes take got gets get went goes go
		came comes come gave gives give kept keeps keep left leaves put puts ran runs let lets
		guess guesses means meant shows showed shown`) {
		m[w] = true
	}
	return m
}()

// isInitial says whether w is a name's initial ("H." of "Fred H. Frank").
func isInitial(w string) bool {
	r, n := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) && w[n:] == "."
}

// relationStems are the stems (first five letters) of the question's words
// that are not part of a name or a quoted phrase and say what it asks:
// "director", "born", "nationality", "designed". A candidate next to one of
// them in a document fills the question's slot ("directed by Tim Burton").
func relationStems(question string) map[string]bool {
	named := strings.ToLower(strings.Join(append(quoted(question), entities(question)...), " "))
	out := map[string]bool{}
	for _, w := range words(question) {
		lw := strings.ToLower(w)
		if len(lw) < 4 || relationStop[lw] || isDigits(lw) || containsWord(named, lw) {
			continue
		}
		out[stem(lw)] = true
	}
	for _, g := range relationWords {
		for _, q := range g.question {
			if out[q] {
				for _, t := range g.text {
					out[t] = true
				}
				break
			}
		}
	}
	return out
}

// relationWords are the words a text states a relation with when the
// question names it by another: the question asks for a father, the text
// says "the second son of Charlemagne"; for a performer, "recorded by Bing
// Crosby"; for an author, "written by". Stems as relationStems makes them
// (first five letters; "son" whole).
var relationWords = []struct{ question, text []string }{
	{[]string{"fathe", "mothe", "paren", "grand"}, []string{"son", "daugh", "child", "fathe", "mothe", "paren"}},
	{[]string{"daugh", "child"}, []string{"fathe", "mothe", "paren"}},
	{[]string{"spous", "wife", "husba"}, []string{"marri", "wife", "husba", "spous", "widow"}},
	{[]string{"perfo", "singe"}, []string{"recor", "sung", "sang", "perfo", "singe"}},
	{[]string{"autho", "write"}, []string{"writt", "wrote", "autho", "write"}},
}

// relationStop are the question words that say nothing of a relation.
var relationStop = func() map[string]bool {
	m := map[string]bool{}
	for w := range stopwords {
		m[w] = true
	}
	for _, w := range []string{"born", "located", "known", "called", "named", "film", "movie", "person"} {
		delete(m, w) // they do name a relation ("born in ___")
	}
	for _, w := range []string{"many", "much", "first", "last", "later", "earlier", "older", "younger", "same", "also", "both", "does", "that", "with"} {
		m[w] = true
	}
	return m
}()

func stem(w string) string {
	r := []rune(w)
	if len(r) > 5 {
		r = r[:5]
	}
	return string(r)
}

// inSlot says whether the span at [start, end) of text sits next to a word
// of one of the stems: within the 50 bytes before it or the 25 after. A
// bridge candidate is ranked by it: a relation word of the sentence before
// may still speak of it ("He directed films. Among them: Ed Wood").
func inSlot(text string, start, end int, stems map[string]bool) bool {
	return slotNear(text, start, end, stems, false)
}

// inSentenceSlot is inSlot within the span's own sentence ("… fails
// halfway. Marta Ruiz keeps the spare unit": "fails" says nothing of Marta
// Ruiz). The report's links are checked by it.
func inSentenceSlot(text string, start, end int, stems map[string]bool) bool {
	return slotNear(text, start, end, stems, true)
}

func slotNear(text string, start, end int, stems map[string]bool, sentence bool) bool {
	if len(stems) == 0 {
		return false
	}
	a := max(0, start-50)
	b := min(len(text), end+25)
	for i := start - 1; sentence && i > a; i-- {
		if sentenceEnd(text, i) {
			a = i + 1
			break
		}
	}
	for i := end; sentence && i < b; i++ {
		if sentenceEnd(text, i) {
			b = i
			break
		}
	}
	for _, w := range strings.FieldsFunc(text[a:start]+" "+text[end:b], func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) >= 4 && stems[stem(strings.ToLower(w))] || len(w) == 3 && stems[strings.ToLower(w)] {
			return true
		}
	}
	return false
}

// sentenceEnd says whether text[i] ends a sentence: a full stop, question
// or exclamation mark after a lower-case letter, a digit or a closing
// bracket or quote, and before a space ("J. Smith" and "1.5" go on).
func sentenceEnd(text string, i int) bool {
	if i <= 0 || i+1 >= len(text) || text[i+1] != ' ' || !strings.ContainsRune(".!?", rune(text[i])) {
		return false
	}
	c := text[i-1]
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ')' || c == '"' || c == '\''
}

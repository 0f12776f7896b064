package retrieval

import (
	"strings"
	"unicode"
)

// maxTerms bounds the BM25 query: longer queries keep their first terms.
const maxTerms = 64

// Terms splits a query into the distinct lower-cased words BM25 searches for
// (letters and digits; everything else separates words). The store quotes
// each one, so no query text can be read as FTS5 syntax.
func Terms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if seen[w] || stopwords[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxTerms {
			break
		}
	}
	return out
}

// stopwords are words too common to help BM25 that make its OR query slow.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by for from has have in is it its of on or that the
		to was were will with this these those which what who whom how why when where do does did`) {
		m[w] = true
	}
	return m
}()

// Package terms splits text into the words keyword search looks for.
//
// Every BM25 query of capsuled is built here: Capsule for capsule queries
// (internal/retrieval, whatever the store), Memory for memory searches
// (both memory stores), and Words for the plain lower-cased words (memory
// selection's speaker names). A word is a run of letters and digits;
// everything else separates words, so no query text can be read as
// full-text syntax.
//
// The two stopword lists differ on purpose, and each is the one its
// benchmark was measured with (docs/benchmarks.md: SciFact and HotpotQA for
// capsules, LoCoMo for memory): memory searches run over chat turns, so
// their list also drops the pronouns, possessives and auxiliaries that every
// turn holds ("I", "you", "my", "had", "been"); capsule documents are
// passages whose questions keep those words rarely and the list stays
// short. Changing either list moves that benchmark's figures.
//
// Not here: the built-in engine's terms (internal/engine/builtin) read tool
// results as a model would, keep the case of names and drop a longer list
// of question words, and the WordPiece tokenizer (internal/embed/wordpiece)
// is the embedding model's own.
package terms

import (
	"slices"
	"strings"
	"unicode"
)

// MaxQuery bounds a query's terms. A memory search keeps its first MaxQuery
// terms; a capsule query with more (a query that is itself a document) keeps
// the MaxQuery it repeats most, read over the whole text, first occurrence
// breaking ties, so its topic rather than its opening decides the keyword
// search. A query with at most MaxQuery terms keeps them all either way.
const MaxQuery = 64

// Words splits text into its lower-cased words, in order, repeats kept.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Capsule returns the distinct words of a capsule query, in order, without
// the capsule stopwords, at most MaxQuery (see MaxQuery for which).
func Capsule(q string) []string {
	all := distinct(q, capsuleStop, 0)
	if len(all) <= MaxQuery {
		return all
	}
	count := map[string]int{}
	for _, w := range Words(q) {
		count[w]++
	}
	order := make(map[string]int, len(all))
	for i, w := range all {
		order[w] = i
	}
	top := slices.Clone(all)
	slices.SortStableFunc(top, func(a, b string) int { return count[b] - count[a] })
	top = top[:MaxQuery]
	slices.SortFunc(top, func(a, b string) int { return order[a] - order[b] })
	return top
}

// Memory returns the distinct words of a memory search, in order, without
// the memory stopwords, at most MaxQuery.
func Memory(text string) []string { return distinct(text, memoryStop, MaxQuery) }

// distinct returns the distinct words of text not in stop, in order, at
// most max (0: all).
func distinct(text string, stop map[string]bool, max int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range Words(text) {
		if seen[w] || stop[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == max {
			break
		}
	}
	return out
}

// capsuleStop are words too common to help BM25 that make its OR query
// slow.
var capsuleStop = set(`a an and are as at be by for from has have in is it its of on or that the
	to was were will with this these those which what who whom how why when where do does did`)

// memoryStop is capsuleStop for chat turns (see the package comment).
var memoryStop = set(`a an and are as at be been but by did do does for from had has have he her his how i
	if in into is it its me my of on or our she so that the their them they this to was we were what when where which
	who whom why will with you your`)

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

package agent_test

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode"

	"capsuled/internal/agent"
)

// bm25MemoryBackend is an in-memory BM25 index written for tests and the
// policy benchmark: search and text_search both rank by BM25 (k1 1.2, b 0.75)
// over title + text, and read returns a document's whole text.
type bm25MemoryBackend struct {
	docs   []memDoc
	byID   map[string]int
	post   map[string][]posting
	avgLen float64
}

type memDoc struct {
	id, title, text string
	length          int
}

type posting struct {
	doc, tf int
}

func newBM25MemoryBackend(docs []memDoc) *bm25MemoryBackend {
	b := &bm25MemoryBackend{docs: docs, byID: map[string]int{}, post: map[string][]posting{}}
	total := 0
	for i := range docs {
		b.byID[docs[i].id] = i
		tf := map[string]int{}
		toks := bmTokens(docs[i].title + " " + docs[i].text)
		for _, t := range toks {
			tf[t]++
		}
		docs[i].length = len(toks)
		total += len(toks)
		for t, n := range tf {
			b.post[t] = append(b.post[t], posting{i, n})
		}
	}
	b.avgLen = float64(total) / float64(max(len(docs), 1))
	return b
}

var bmStop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "in": true, "on": true, "and": true, "or": true, "is": true, "was": true, "what": true, "which": true, "who": true, "to": true, "for": true, "by": true, "with": true, "that": true, "as": true, "at": true, "from": true, "are": true, "were": true, "be": true, "it": true, "its": true, "this": true, "did": true, "does": true, "do": true, "how": true, "when": true, "where": true}

func bmTokens(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := f[:0]
	for _, t := range f {
		if !bmStop[t] {
			out = append(out, t)
		}
	}
	return out
}

func (b *bm25MemoryBackend) rank(query string, limit int) []agent.Hit {
	scores := map[int]float64{}
	n := float64(len(b.docs))
	seen := map[string]bool{}
	for _, t := range bmTokens(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := b.post[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			dl := float64(b.docs[p.doc].length)
			scores[p.doc] += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/b.avgLen))
		}
	}
	type sd struct {
		d int
		s float64
	}
	list := make([]sd, 0, len(scores))
	for d, s := range scores {
		list = append(list, sd{d, s})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].s != list[j].s {
			return list[i].s > list[j].s
		}
		return list[i].d < list[j].d
	})
	out := make([]agent.Hit, 0, min(limit, len(list)))
	for _, x := range list[:min(limit, len(list))] {
		d := b.docs[x.d]
		out = append(out, agent.Hit{ID: d.id, Title: d.title, Text: d.text, Score: x.s})
	}
	return out
}

func (b *bm25MemoryBackend) Search(_ context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.rank(q, limit), nil
}

func (b *bm25MemoryBackend) TextSearch(_ context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.rank(q, limit), nil
}

func (b *bm25MemoryBackend) Read(_ context.Context, id string) (string, error) {
	if i, ok := b.byID[id]; ok {
		return b.docs[i].title + "\n" + b.docs[i].text, nil
	}
	return "", nil
}

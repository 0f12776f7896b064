package sqlite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// skipIndex is an index of n documents whose token i is held by about
// n/(i+1) of them (the first lists long enough for skip tables), some dead;
// the last document holds no token yet. The live ones are chunks of items
// of four.
func skipIndex(r *rand.Rand, n, vocab int) *kwIndex {
	ix := &kwIndex{terms: map[string]*kwPosting{}, items: map[string][]uint32{}}
	ix.rowids = make([]int64, n)
	ix.dl = make([]uint32, n)
	ix.dead = make([]uint64, (n+63)/64)
	for d := range n {
		ix.rowids[d] = int64(d + 1)
		ix.dl[d] = uint32(5 + r.IntN(60))
		for i := range vocab {
			if d < n-1 && r.IntN(i+1) == 0 {
				t := fmt.Sprintf("t%d", i)
				p := ix.terms[t]
				if p == nil {
					p = &kwPosting{last: -1}
					ix.terms[t] = p
				}
				tf := uint32(1)
				if r.IntN(4) == 0 {
					tf += uint32(r.IntN(5))
				}
				p.add(uint32(d), tf, ix.dl[d])
			}
		}
		ix.owner = append(ix.owner, kwNoOwner)
		ix.pos = append(ix.pos, uint32(d%4))
		if r.IntN(20) == 0 {
			ix.dead[d/64] |= 1 << (d % 64)
			ix.ndead++
			continue
		}
		id := fmt.Sprintf("i%d", d/4) // items of four chunks; a dead one in none
		if ix.items[id] == nil {
			ix.names = append(ix.names, id)
		}
		ix.items[id] = append(ix.items[id], uint32(d))
		ix.owner[d] = uint32(len(ix.names) - 1)
	}
	return ix
}

// TestScoreInParts: scored in document ranges on several goroutines, every
// row gets the score of one pass, to the bit, for queries of rare and
// common terms, repeated and unknown ones, with dead rows and an item
// filter, and after a list grew (its skip table made again).
func TestScoreInParts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, vocab = 5000, 40
	ix := skipIndex(r, n, vocab)
	sorted := func(c []kwCand) []kwCand {
		slices.SortFunc(c, func(a, b kwCand) int { return int(a.doc) - int(b.doc) })
		return c
	}
	for q := range 200 {
		if q == 100 { // lists grow: their tables are made again
			for i := range 3 {
				ix.terms[fmt.Sprintf("t%d", i)].add(uint32(n-1), 2, ix.dl[n-1])
			}
		}
		var toks []string
		for range 1 + r.IntN(5) {
			toks = append(toks, fmt.Sprintf("t%d", int(math.Pow(float64(vocab+5), r.Float64()))))
		}
		st := kwStats{avgdl: 30, idf: make([]float64, len(toks))}
		for i := range st.idf {
			st.idf[i] = 1e-6 + 4*r.Float64()
		}
		var allowed []uint64
		if q%4 == 0 {
			allowed = make([]uint64, len(ix.dead))
			for d := range n {
				if r.IntN(3) == 0 {
					allowed[d/64] |= 1 << (d % 64)
				}
			}
		}
		want := sorted(ix.scoreInParts(toks, st, allowed, 1, 1))
		for _, parts := range []int{2, 3, 8} {
			got := sorted(ix.scoreInParts(toks, st, allowed, parts, 1))
			if len(got) != len(want) {
				t.Fatalf("query %d %v in %d parts: %d rows, want %d", q, toks, parts, len(got), len(want))
			}
			for i := range got {
				if got[i].doc != want[i].doc || math.Float64bits(got[i].score) != math.Float64bits(want[i].score) {
					t.Fatalf("query %d %v in %d parts: row %d is %d %v, want %d %v", q, toks, parts, i, got[i].doc, got[i].score, want[i].doc, want[i].score)
				}
			}
		}
	}
}

// TestSeek: a walk from seek(lo) meets every posting of lo or later that a
// walk from the start meets, for lists with and without a skip table.
func TestSeek(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 100, kwSkipMin - 1, kwSkipMin, 3000} {
		p := &kwPosting{last: -1}
		var docs []int64
		doc := uint32(0)
		for range size {
			doc += 1 + uint32(r.IntN(9))
			p.add(doc, 1, 10)
			docs = append(docs, int64(doc))
		}
		for lo := int64(-1); lo <= int64(doc)+2; lo += 1 + int64(r.IntN(50)) {
			off, d := p.seek(lo)
			var got []int64
			for b := p.data[off:]; len(b) > 0; {
				dd, _, m := kwNext(b)
				b = b[m:]
				d += int64(dd)
				if d >= lo {
					got = append(got, d)
				}
			}
			i, _ := slices.BinarySearch(docs, lo)
			if !slices.Equal(got, docs[i:]) {
				t.Fatalf("list of %d from %d: %d postings, want %d", size, lo, len(got), len(docs)-i)
			}
		}
	}
}

// TestSkipTablesFromFile: a keyword index file's long lists come back with
// their skip tables made while they were checked, the tables a list makes
// for itself.
func TestSkipTablesFromFile(t *testing.T) {
	ix := skipIndex(rand.New(rand.NewPCG(5, 6)), 3000, 20)
	back, _, err := decodeKW(encodeKW(ix, kwStamp{1, 2, 3}))
	if err != nil {
		t.Fatal(err)
	}
	long := 0
	for term, p := range back.terms {
		tab := p.skipTable.Load()
		if p.n < kwSkipMin {
			if tab != nil {
				t.Errorf("%s: %d postings, a skip table read", term, p.n)
			}
			continue
		}
		long++
		if tab == nil {
			t.Fatalf("%s: %d postings, no skip table read", term, p.n)
		}
		read := tab.blocks
		p.skipTable.Store(nil)
		if made := p.skips(); !slices.Equal(read, made) {
			t.Fatalf("%s: skip table read %v, made %v", term, read[:min(3, len(read))], made[:min(3, len(made))])
		}
	}
	if long == 0 {
		t.Fatal("no list long enough for a skip table")
	}
}

// BenchmarkScore times the keyword index's scoring of one query on a
// synthetic index held in memory (no database): CAPSULED_SCORE_DOCS
// documents (default 200,000), token i held by about n/(i+1) of them, the
// query the first ten tokens (about three postings a document), on up to
// GOMAXPROCS goroutines as a query runs.
//
//	CAPSULED_SCORE_DOCS=1000000 go test -run '^$' -bench BenchmarkScore -benchtime 20x ./internal/store/sqlite
func BenchmarkScore(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("CAPSULED_SCORE_DOCS")); err == nil && v > 0 {
		n = v
	}
	ix := skipIndex(rand.New(rand.NewPCG(7, 8)), n, 10)
	toks := make([]string, 10)
	st := kwStats{avgdl: 34, idf: make([]float64, len(toks))}
	postings := 0
	for i := range toks {
		toks[i] = fmt.Sprintf("t%d", i)
		st.idf[i] = math.Log(float64(n) / float64(ix.terms[toks[i]].n))
		postings += ix.terms[toks[i]].n
	}
	b.ResetTimer()
	for range b.N {
		if c := ix.score(toks, st, nil); len(c) == 0 {
			b.Fatal("no candidates")
		}
	}
	b.ReportMetric(float64(postings), "postings")
}

// TestBM25Ones: the table of a single occurrence's factor gives bm25Term's
// bits for every length it covers.
func TestBM25Ones(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 50 {
		avgdl := 1 + 400*r.Float64()
		ones := bm25Ones(avgdl)
		idf := 1e-6 + 5*r.Float64()
		for d := range kwOnesLen {
			if got, want := float64(idf*ones[d]), bm25Term(idf, 1, float64(d), avgdl); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("avgdl %v, length %d: %v from the table, %v", avgdl, d, got, want)
			}
		}
	}
}

package retrieval

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"

	"capsuled/internal/domain"
	"capsuled/internal/rank"
	"capsuled/internal/vecmath"
)

// approxRerankShare: each worker of an approximate scan reranks at least
// 1/approxRerankShare of its chunks.
const approxRerankShare = 16

// minChunksPerWorker keeps small scans on one goroutine: below it the cost
// of starting workers exceeds the work.
const minChunksPerWorker = 8192

// span is one worker's share of a dense scan: entries [from, to).
type span struct{ from, to int }

// scored is a chunk of a dense scan: entry en, its i-th vector.
type scored struct {
	s  float32
	en *entry
	i  int
}

func (a scored) ref() ref { return ref{a.en.item.ID, a.en.idxs[a.i]} }

// worse reports whether a ranks below b (lower cosine, then the larger ref).
func worse(a, b scored) bool {
	if a.s != b.s {
		return a.s < b.s
	}
	return refLess(b.ref(), a.ref())
}

// newTopK is an empty selection of the k best scored chunks.
func newTopK(k int) *rank.TopK[scored] { return rank.NewTopK(k, worse) }

// threshold is the score a chunk must reach to be offered to t: anything
// while t is not full.
func threshold(t *rank.TopK[scored]) float32 {
	if !t.Full() {
		return float32(math.Inf(-1))
	}
	return t.Worst().s
}

// denseTopK returns the k chunks of the items pred accepts with the highest
// cosine to q (vectors are unit length), best first. Capsules of at least
// approxMin chunks (0: never) are searched approximately: a Hamming scan over
// the vectors' sign codes picks rerank candidates, which are then scored
// exactly. Either way the scan is split across the cores.
func denseTopK(ci *capIndex, q []float32, dim, k int, pred Predicate, approxMin, rerank int) []*cand {
	list, spans := ci.snapshot()
	approx := approxMin > 0 && ci.chunks >= approxMin && ci.codeWords > 0
	var qcode []uint64
	if approx {
		qcode = signCode(q, ci.mean, ci.codeWords)
	}
	// Each worker reranks at least its share of its chunks: the true top k
	// sit at a rank among the Hamming distances that grows with the chunks
	// scanned, so a fixed count loses recall as the capsule grows (on
	// bench scale's vectors at 260,000 chunks, 1,000 per worker gave
	// recall@10 0.81, 10,000 gave 0.98).
	rerank = max(rerank, ci.chunks/max(1, len(spans))/approxRerankShare)
	parts := make([][]scored, len(spans))
	var wg sync.WaitGroup
	for w, sp := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if approx {
				buf, _ := ci.dists.Get().(*[]uint16)
				if buf == nil {
					buf = new([]uint16)
				}
				parts[w] = approxScan(list[sp.from:sp.to], q, qcode, dim, k, max(rerank, k), pred, buf)
				ci.dists.Put(buf)
			} else {
				parts[w] = exactScan(list[sp.from:sp.to], q, dim, k, pred)
			}
		}()
	}
	wg.Wait()
	var all []scored
	for _, p := range parts {
		all = append(all, p...)
	}
	return topCands(all, k)
}

// sortScored sorts best first.
func sortScored(all []scored) { rank.SortBest(all, worse) }

// exactScan scores every chunk of the entries pred accepts.
func exactScan(list []*entry, q []float32, dim, k int, pred Predicate) []scored {
	t := newTopK(k)
	for _, en := range list {
		if len(en.idxs) == 0 || (pred != nil && !pred(&en.item)) {
			continue
		}
		for i := range en.idxs {
			s := vecmath.Dot(q, en.vecs[i*dim:(i+1)*dim])
			if s >= threshold(t) {
				t.Offer(scored{s, en, i})
			}
		}
	}
	return t.Kept()
}

// approxScan keeps the rerank chunks nearest to q in Hamming distance of
// their sign codes, then scores those exactly. Each chunk's distance is
// computed once (the filter asked once per item) into *buf, reused by the
// second pass, which picks the chunks under the cut-off.
func approxScan(list []*entry, q []float32, qcode []uint64, dim, k, rerank int, pred Predicate, buf *[]uint16) []scored {
	words := len(qcode)
	maxD := 64 * words
	dist := (*buf)[:0]
	hist := make([]int, maxD+1)
	n := 0
	for _, en := range list {
		if len(en.idxs) == 0 {
			continue
		}
		if pred != nil && !pred(&en.item) {
			for range en.idxs {
				dist = append(dist, skipDist)
			}
			continue
		}
		for i := range en.idxs {
			d := hamming(qcode, en.codes[i*words:(i+1)*words])
			dist = append(dist, uint16(d))
			hist[d]++
			n++
		}
	}
	*buf = dist
	if n <= rerank {
		return exactScan(list, q, dim, k, pred)
	}
	cut, seen := 0, 0
	for ; cut <= maxD; cut++ {
		seen += hist[cut]
		if seen >= rerank {
			break
		}
	}
	// Chunks at distance < cut all qualify; those at cut fill the rest.
	atCut := rerank - (seen - hist[cut])
	t := newTopK(k)
	c := 0
	for _, en := range list {
		if len(en.idxs) == 0 {
			continue
		}
		for i := range en.idxs {
			d := int(dist[c])
			c++
			if d > cut { // also skipDist: the filter rejected the item
				continue
			}
			if d == cut {
				if atCut == 0 {
					continue
				}
				atCut--
			}
			t.Offer(scored{vecmath.Dot(q, en.vecs[i*dim:(i+1)*dim]), en, i})
		}
	}
	return t.Kept()
}

// skipDist marks a chunk the filter rejected: above any distance.
const skipDist = math.MaxUint16

// hamming is the number of differing bits.
func hamming(a, b []uint64) int {
	if len(a) == 6 && len(b) >= 6 { // 384 dimensions, the default model's
		return bits.OnesCount64(a[0]^b[0]) + bits.OnesCount64(a[1]^b[1]) + bits.OnesCount64(a[2]^b[2]) +
			bits.OnesCount64(a[3]^b[3]) + bits.OnesCount64(a[4]^b[4]) + bits.OnesCount64(a[5]^b[5])
	}
	b = b[:len(a)]
	d := 0
	for i := range a {
		d += bits.OnesCount64(a[i] ^ b[i])
	}
	return d
}

// signCode is the sign bits of v − mean (mean may be nil), packed.
func signCode(v, mean []float32, words int) []uint64 {
	c := make([]uint64, words)
	appendSignCode(c[:0], v, mean)
	return c
}

// appendSignCode appends the packed sign bits of v − mean to dst.
func appendSignCode(dst []uint64, v, mean []float32) []uint64 {
	var w uint64
	for j, x := range v {
		if mean != nil {
			x -= mean[j]
		}
		if x > 0 {
			w |= 1 << (j % 64)
		}
		if j%64 == 63 {
			dst = append(dst, w)
			w = 0
		}
	}
	if len(v)%64 != 0 {
		dst = append(dst, w)
	}
	return dst
}

// snapshot returns the capsule's entries that have vectors, in item id
// order, and their split into worker spans of about equal chunk counts.
// Callers hold ci.mu for reading. The list is built on the first query after
// a load; item updates then change it in place (put, drop) under ci.mu.
func (ci *capIndex) snapshot() ([]*entry, []span) {
	ci.snapMu.Lock()
	defer ci.snapMu.Unlock()
	if ci.list != nil {
		return ci.list, ci.spans
	}
	list := make([]*entry, 0, len(ci.items))
	for _, en := range ci.items {
		if len(en.idxs) > 0 {
			list = append(list, en)
		}
	}
	// Sorted, so the split (and so the result's tie order) is stable.
	slices.SortFunc(list, func(a, b *entry) int { return strings.Compare(a.item.ID, b.item.ID) })
	ci.list = list
	ci.split()
	return ci.list, ci.spans
}

// listFrom sets the snapshot from items, the order the Source listed
// them in, where that is item id order: a load then skips snapshot's
// sort (0.1–0.2 s for 130,000 items). Callers hold ci.mu for writing,
// after filling ci.items from items.
func (ci *capIndex) listFrom(items []domain.Item) {
	if !slices.IsSortedFunc(items, func(a, b domain.Item) int { return strings.Compare(a.ID, b.ID) }) {
		return // snapshot sorts
	}
	list := make([]*entry, 0, len(items))
	for i, it := range items {
		if i > 0 && it.ID == items[i-1].ID {
			continue
		}
		if en := ci.items[it.ID]; en != nil && len(en.idxs) > 0 {
			list = append(list, en)
		}
	}
	ci.snapMu.Lock()
	ci.list = list
	ci.split()
	ci.snapMu.Unlock()
}

// workers is how many goroutines scan the capsule.
func (ci *capIndex) workers() int {
	return max(1, min(runtime.GOMAXPROCS(0), ci.chunks/minChunksPerWorker))
}

// split cuts ci.list into ci.workers() spans of about equal chunk counts;
// callers hold snapMu.
func (ci *capIndex) split() {
	workers := ci.workers()
	per := (ci.chunks + workers - 1) / workers
	var spans []span
	from, acc := 0, 0
	for i, en := range ci.list {
		acc += len(en.idxs)
		if acc >= per && len(spans) < workers-1 {
			spans = append(spans, span{from, i + 1})
			from, acc = i+1, 0
		}
	}
	ci.spans = append(spans, span{from, len(ci.list)})
}

// put makes en, a new or changed item's entry, part of the built list: it
// replaces the item's old entry, or is inserted at its place in id order
// (removed when it has no vectors), and the spans after it move by one.
// That costs a binary search and a copy of pointers, not a rebuild. Callers
// hold ci.mu for writing (no reader holds the list then).
func (ci *capIndex) put(en *entry) {
	ci.snapMu.Lock()
	defer ci.snapMu.Unlock()
	if ci.list == nil {
		return // built by the next query
	}
	i, found := slices.BinarySearchFunc(ci.list, en.item.ID, func(e *entry, id string) int { return strings.Compare(e.item.ID, id) })
	switch {
	case found && len(en.idxs) > 0:
		ci.list[i] = en
	case found:
		ci.list = slices.Delete(ci.list, i, i+1)
		ci.shift(i, -1)
	case len(en.idxs) > 0:
		ci.list = slices.Insert(ci.list, i, en)
		ci.shift(i, 1)
	}
	if len(ci.spans) != ci.workers() {
		ci.split()
	}
}

// drop removes an item's entry from the built list; callers hold ci.mu for
// writing.
func (ci *capIndex) drop(id string) {
	ci.snapMu.Lock()
	defer ci.snapMu.Unlock()
	if ci.list == nil {
		return
	}
	if i, found := slices.BinarySearchFunc(ci.list, id, func(e *entry, id string) int { return strings.Compare(e.item.ID, id) }); found {
		ci.list = slices.Delete(ci.list, i, i+1)
		ci.shift(i, -1)
		if len(ci.spans) != ci.workers() {
			ci.split()
		}
	}
}

// shift moves the span bounds after list position i by d (1: an entry was
// inserted at i; -1: the entry at i was removed). The spans' chunk counts
// drift apart with skewed updates until the next split; each still scans
// its part correctly.
func (ci *capIndex) shift(i, d int) {
	last := len(ci.spans) - 1
	for s := range ci.spans {
		if ci.spans[s].from > i {
			ci.spans[s].from += d
		}
		if ci.spans[s].to > i || (d > 0 && s == last && ci.spans[s].to == i) {
			ci.spans[s].to += d
		}
	}
}

// invalidate drops the built list; callers hold ci.mu for writing.
func (ci *capIndex) invalidate() {
	ci.snapMu.Lock()
	ci.list, ci.spans = nil, nil
	ci.snapMu.Unlock()
}

// recode recomputes the mean vector and every sign code; callers hold
// ci.mu for writing. The mean centres the codes: embedding models' vectors
// share a common direction that would otherwise fix many bits.
func (ci *capIndex) recode(dim int) {
	ci.codeWords = (dim + 63) / 64
	mean := make([]float64, dim)
	n := 0
	for _, en := range ci.items {
		for i := range en.idxs {
			for j, x := range en.vecs[i*dim : (i+1)*dim] {
				mean[j] += float64(x)
			}
			n++
		}
	}
	ci.mean = make([]float32, dim)
	if n > 0 {
		for j := range mean {
			ci.mean[j] = float32(mean[j] / float64(n))
		}
	}
	ci.codedAt = n
	ci.vecEdits++
	for _, en := range ci.items {
		ci.encode(en, dim)
	}
}

// encode fills en's sign codes with the capsule's current mean, in a new
// slice: the old one may be a view of a read-only vectors file, or read by
// a file write in progress.
func (ci *capIndex) encode(en *entry, dim int) {
	codes := make([]uint64, 0, len(en.idxs)*ci.codeWords)
	for i := range en.idxs {
		codes = appendSignCode(codes, en.vecs[i*dim:(i+1)*dim], ci.mean)
	}
	en.codes = codes
}

// cosineOf returns the cosine of one chunk of en with q, if it has a vector.
func cosineOf(en *entry, idx int, q []float32, dim int) (float64, bool) {
	for i, x := range en.idxs {
		if x == idx {
			return float64(vecmath.Dot(q, en.vecs[i*dim:(i+1)*dim])), true
		}
	}
	return 0, false
}

func refLess(a, b ref) bool {
	if a.item != b.item {
		return a.item < b.item
	}
	return a.idx < b.idx
}

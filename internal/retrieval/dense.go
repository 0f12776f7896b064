package retrieval

import (
	"container/heap"
)

// denseTopK scans every chunk vector of the items pred accepts and returns the
// k best by cosine with q (vectors are unit length), best first.
func denseTopK(ci *capIndex, q []float32, dim, k int, pred Predicate) []*cand {
	h := make(candHeap, 0, k+1)
	for _, en := range ci.items {
		if len(en.idxs) == 0 || (pred != nil && !pred(&en.item)) {
			continue
		}
		for i, idx := range en.idxs {
			s := float64(dot(q, en.vecs[i*dim:(i+1)*dim]))
			if len(h) == k {
				worst := h[0]
				if s < worst.dense || (s == worst.dense && !refLess(ref{en.item.ID, idx}, worst.ref)) {
					continue
				}
			}
			heap.Push(&h, &cand{ref: ref{en.item.ID, idx}, en: en, dense: s, hasDense: true})
			if len(h) > k {
				heap.Pop(&h)
			}
		}
	}
	out := make([]*cand, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(*cand)
	}
	return out
}

// cosineOf returns the cosine of one chunk of en with q, if it has a vector.
func cosineOf(en *entry, idx int, q []float32, dim int) (float64, bool) {
	for i, x := range en.idxs {
		if x == idx {
			return float64(dot(q, en.vecs[i*dim:(i+1)*dim])), true
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

// dot is the inner product, unrolled by four.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// candHeap is a min-heap: the worst candidate (lowest cosine, then the
// larger ref) on top.
type candHeap []*cand

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	if h[i].dense != h[j].dense {
		return h[i].dense < h[j].dense
	}
	return refLess(h[j].ref, h[i].ref)
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(*cand)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

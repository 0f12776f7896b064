package rank

import "slices"

// TopK keeps the k best of the values offered to it, in a min-heap with the
// worst kept value on top: offering costs O(log k), and a value no better
// than that worst one is turned away at once. It is the dense scan's
// selection in capsule retrieval and in memory selection.
//
// worse must be a strict total order (ties broken, for example by id), so
// that the result does not depend on the order of the offers.
type TopK[T any] struct {
	k     int
	worse func(a, b T) bool
	h     []T
}

// NewTopK returns an empty TopK for the k (≥ 1) best values by worse,
// which reports whether a ranks below b.
func NewTopK[T any](k int, worse func(a, b T) bool) *TopK[T] {
	return &TopK[T]{k: k, worse: worse, h: make([]T, 0, k)}
}

// Full reports whether k values are kept: a new one then enters only if it
// is better than Worst.
func (t *TopK[T]) Full() bool { return len(t.h) >= t.k }

// Worst is the worst value kept; only when at least one is.
func (t *TopK[T]) Worst() T { return t.h[0] }

// Offer keeps c if fewer than k values are kept or c is better than the
// worst of them, which it then replaces.
func (t *TopK[T]) Offer(c T) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !t.worse(t.h[0], c) {
		return
	}
	t.h[0] = c
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(t.h) && t.worse(t.h[l], t.h[m]) {
			m = l
		}
		if r := l + 1; r < len(t.h) && t.worse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// Kept returns the values kept, in heap order (not sorted).
func (t *TopK[T]) Kept() []T { return t.h }

// Best returns the values kept, best first. It sorts the heap in place, so
// t must not be offered to afterwards.
func (t *TopK[T]) Best() []T {
	SortBest(t.h, t.worse)
	return t.h
}

// SortBest sorts vs best first by worse.
func SortBest[T any](vs []T, worse func(a, b T) bool) {
	slices.SortFunc(vs, func(a, b T) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
}

package rank

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type idScore struct {
	id    int
	score float64
}

func worseIDScore(a, b idScore) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.id > b.id
}

// TestTopKIsTheSortedPrefix checks TopK against sorting everything and
// cutting, with many ties (scores drawn from a few values), for several k.
func TestTopKIsTheSortedPrefix(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 100, 1000} {
		all := make([]idScore, n)
		for i := range all {
			all[i] = idScore{i, float64(r.IntN(7))}
		}
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		want := slices.Clone(all)
		SortBest(want, worseIDScore)
		for _, k := range []int{1, 3, 10, 2000} {
			top := NewTopK(k, worseIDScore)
			for _, v := range all {
				top.Offer(v)
			}
			if top.Full() != (n >= k) {
				t.Errorf("n %d k %d: Full %v", n, k, top.Full())
			}
			if len(top.Kept()) > 0 && top.Worst() != slices.MinFunc(top.Kept(), func(a, b idScore) int {
				if worseIDScore(a, b) {
					return -1
				}
				return 1
			}) {
				t.Errorf("n %d k %d: Worst is not the worst kept", n, k)
			}
			got := top.Best()
			if w := want[:min(k, n)]; !slices.Equal(got, w) {
				t.Fatalf("n %d k %d: got %v, want %v", n, k, got, w)
			}
		}
	}
}

package encbatch

import (
	"slices"
	"testing"

	"capsuled/internal/embed/wordpiece"
)

func enc(n int) wordpiece.Encoding {
	e := wordpiece.Encoding{}
	for i := range n {
		e.IDs = append(e.IDs, int64(10+i))
		e.AttentionMask = append(e.AttentionMask, 1)
		e.TypeIDs = append(e.TypeIDs, 0)
	}
	return e
}

func TestPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		lens      []int
		maxRows   int
		maxTokens int
		wantIndex [][]int
		wantSeq   []int
	}{
		{"empty", nil, 4, 0, nil, nil},
		{"one batch sorted", []int{2, 5, 3}, 4, 0, [][]int{{1, 2, 0}}, []int{5}},
		{"rows limit", []int{2, 5, 3}, 2, 0, [][]int{{1, 2}, {0}}, []int{5, 2}},
		{"token limit", []int{4, 4, 4}, 8, 8, [][]int{{0, 1}, {2}}, []int{4, 4}},
		{"oversized row alone", []int{10, 2}, 8, 4, [][]int{{0}, {1}}, []int{10, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var encs []wordpiece.Encoding
			for _, n := range tt.lens {
				encs = append(encs, enc(n))
			}
			got := Plan(encs, tt.maxRows, tt.maxTokens, 0)
			if len(got) != len(tt.wantIndex) {
				t.Fatalf("%d batches, want %d", len(got), len(tt.wantIndex))
			}
			for i, b := range got {
				if !slices.Equal(b.Index, tt.wantIndex[i]) || b.Seq != tt.wantSeq[i] {
					t.Errorf("batch %d = %v seq %d, want %v seq %d", i, b.Index, b.Seq, tt.wantIndex[i], tt.wantSeq[i])
				}
				for r, idx := range b.Index {
					for j := range b.Seq {
						m := b.AttentionMask[r*b.Seq+j]
						if (j < tt.lens[idx]) != (m == 1) {
							t.Errorf("batch %d row %d pos %d mask %d", i, r, j, m)
						}
					}
				}
			}
		})
	}
}

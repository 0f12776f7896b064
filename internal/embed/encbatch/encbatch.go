package encbatch

import (
	"sort"

	"capsuled/internal/embed/wordpiece"
)

// Batch is a padded [Len(Index), Seq] block of inputs, row-major.
type Batch struct {
	Index         []int // Index[r] is the caller's position of row r
	Seq           int   // padded sequence length
	IDs           []int64
	AttentionMask []int64
	TypeIDs       []int64
}

// Rows is the number of sequences in the batch.
func (b Batch) Rows() int { return len(b.Index) }

// Plan splits encs into batches of at most maxRows rows and, when
// maxTokens > 0, at most maxTokens padded tokens (a single longer row still
// gets a batch of its own). Rows are padded with padID and mask 0.
func Plan(encs []wordpiece.Encoding, maxRows, maxTokens int, padID int64) []Batch {
	maxRows = max(maxRows, 1)
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return encs[order[a]].Len() > encs[order[b]].Len() })
	var out []Batch
	for start := 0; start < len(order); {
		seq := encs[order[start]].Len() // the longest of this batch: sorted descending
		end := start + 1
		for end < len(order) && end-start < maxRows && (maxTokens <= 0 || (end-start+1)*seq <= maxTokens) {
			end++
		}
		rows := order[start:end]
		b := Batch{Index: append([]int(nil), rows...), Seq: seq,
			IDs: make([]int64, len(rows)*seq), AttentionMask: make([]int64, len(rows)*seq), TypeIDs: make([]int64, len(rows)*seq)}
		for r, i := range rows {
			e := encs[i]
			copy(b.IDs[r*seq:], e.IDs)
			copy(b.AttentionMask[r*seq:], e.AttentionMask)
			copy(b.TypeIDs[r*seq:], e.TypeIDs)
			for j := e.Len(); j < seq; j++ {
				b.IDs[r*seq+j] = padID
			}
		}
		out = append(out, b)
		start = end
	}
	return out
}

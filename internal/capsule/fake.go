package capsule

import (
	"context"
	"hash/fnv"
	"math"
	"sync/atomic"

	"capsuled/internal/terms"
)

// FakeEmbedder is a deterministic embedder FOR TESTS: each lower-cased word
// adds a fixed pseudo-random direction, so texts sharing words are close.
// Its vectors carry no meaning beyond word overlap.
type FakeEmbedder struct {
	dim   int
	calls atomic.Int64
}

// Calls is the number of texts embedded so far.
func (f *FakeEmbedder) Calls() int64 { return f.calls.Load() }

// NewFakeEmbedder returns a FakeEmbedder of the given width.
func NewFakeEmbedder(dim int) *FakeEmbedder { return &FakeEmbedder{dim: dim} }

// Dim is the vector width.
func (f *FakeEmbedder) Dim() int { return f.dim }

// ModelID names the fake model.
func (f *FakeEmbedder) ModelID() string { return "fake-hash-embedder" }

// Embed returns one unit vector per text.
func (f *FakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		f.calls.Add(1)
		v := make([]float32, f.dim)
		for _, w := range terms.Words(t) {
			h := fnv.New64a()
			h.Write([]byte(w))
			seed := h.Sum64()
			for j := range v {
				seed = seed*6364136223846793005 + 1442695040888963407
				v[j] += float32(int64(seed>>11)%2001-1000) / 1000
			}
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			v[0], n = 1, 1
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}

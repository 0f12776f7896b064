package gobert

import (
	"context"
	"math"

	"capsuled/internal/embed/bert"
	"capsuled/internal/embed/encbatch"
	"capsuled/internal/vecmath"
)

// maskBias is added to attention scores of padded keys, as Hugging Face's
// BERT (transformers 4.8, which trained this checkpoint) does.
const maskBias = -10000

// forward runs the encoder on one padded batch and returns one pooled,
// normalised vector per row.
func forward(ctx context.Context, w *bert.Weights, b encbatch.Batch) ([][]float32, error) {
	rows, seq, h := b.Rows(), b.Seq, w.HiddenSize
	n := rows * seq
	x := make([]float32, n*h)
	for t := range n {
		id, typ, pos := int(b.IDs[t]), int(b.TypeIDs[t]), t%seq
		row := x[t*h : (t+1)*h]
		we := w.Word[id*h : (id+1)*h]
		pe := w.Position[pos*h : (pos+1)*h]
		te := w.TokenType[typ*h : (typ+1)*h]
		for i := range row {
			row[i] = we[i] + te[i] + pe[i]
		}
	}
	layerNorm(x, w.EmbNorm, h, w.LayerNormEps)

	q := make([]float32, n*h)
	k := make([]float32, n*h)
	v := make([]float32, n*h)
	c := make([]float32, n*h)
	a := make([]float32, n*h)
	inter := make([]float32, n*w.IntermediateSize)
	for _, l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		linear(q, x, l.Query.W, l.Query.B, n, h, h)
		linear(k, x, l.Key.W, l.Key.B, n, h, h)
		linear(v, x, l.Value.W, l.Value.B, n, h, h)
		attention(c, q, k, v, b.AttentionMask, rows, seq, w.NumHeads, w.HeadDim())
		linear(a, c, l.AttnOut.W, l.AttnOut.B, n, h, h)
		for i := range a {
			a[i] += x[i]
		}
		layerNorm(a, l.AttnNorm, h, w.LayerNormEps) // a is now x1
		linear(inter, a, l.Intermediate.W, l.Intermediate.B, n, h, w.IntermediateSize)
		gelu(inter)
		linear(x, inter, l.Output.W, l.Output.B, n, w.IntermediateSize, h)
		for i := range x {
			x[i] += a[i]
		}
		layerNorm(x, l.OutNorm, h, w.LayerNormEps)
	}
	out := make([][]float32, rows)
	for r := range rows {
		vec := make([]float32, h)
		vecmath.MeanPool(vec, x[r*seq*h:(r+1)*seq*h], b.AttentionMask[r*seq:(r+1)*seq], h)
		vecmath.Normalize(vec)
		out[r] = vec
	}
	return out, nil
}

// attention computes multi-head scaled dot-product attention for every
// (row, head) pair, in parallel, writing the merged heads into c.
func attention(c, q, k, v []float32, mask []int64, rows, seq, heads, hd int) {
	h := heads * hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	parallelFor(rows*heads, 1, workers(), func(lo, hi int) {
		qh := make([]float32, seq*hd)
		kh := make([]float32, seq*hd)
		vt := make([]float32, hd*seq)
		p := make([]float32, seq*seq)
		ch := make([]float32, seq*hd)
		for job := lo; job < hi; job++ {
			r, head := job/heads, job%heads
			for s := range seq {
				src := (r*seq+s)*h + head*hd
				copy(qh[s*hd:(s+1)*hd], q[src:src+hd])
				copy(kh[s*hd:(s+1)*hd], k[src:src+hd])
				for d := range hd {
					vt[d*seq+s] = v[src+d]
				}
			}
			matmulABt(p, qh, kh, seq, hd, seq)
			m := mask[r*seq : (r+1)*seq]
			for i := range seq {
				row := p[i*seq : (i+1)*seq]
				for j := range row {
					row[j] *= scale
					if m[j] == 0 {
						row[j] += maskBias
					}
				}
				softmax(row)
			}
			matmulABt(ch, p, vt, seq, seq, hd)
			for s := range seq {
				dst := (r*seq+s)*h + head*hd
				copy(c[dst:dst+hd], ch[s*hd:(s+1)*hd])
			}
		}
	})
}

func softmax(row []float32) {
	mx := row[0]
	for _, x := range row {
		mx = max(mx, x)
	}
	var sum float64
	for i, x := range row {
		e := float32(math.Exp(float64(x - mx)))
		row[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}

// layerNorm normalises every h-wide row of x in place.
func layerNorm(x []float32, n bert.Norm, h int, eps float64) {
	for r := 0; r < len(x); r += h {
		row := x[r : r+h]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(h)
		var variance float64
		for _, v := range row {
			d := float64(v) - mean
			variance += d * d
		}
		variance /= float64(h)
		inv := 1 / math.Sqrt(variance+eps)
		for i, v := range row {
			row[i] = float32((float64(v)-mean)*inv)*n.Gamma[i] + n.Beta[i]
		}
	}
}

// gelu is the exact GELU, 0.5·x·(1+erf(x/√2)), in place.
func gelu(x []float32) {
	parallelFor(len(x), 64, workers(), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := float64(x[i])
			x[i] = float32(0.5 * v * (1 + math.Erf(v/math.Sqrt2)))
		}
	})
}

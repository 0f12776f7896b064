package vecmath

import "math"

// MeanPool averages the rows of hidden ([seq, dim], row-major) whose mask
// entry is non-zero into out (len dim), as sentence-transformers' mean
// pooling does (the count is clamped at 1e-9).
func MeanPool(out []float32, hidden []float32, mask []int64, dim int) {
	acc := make([]float64, dim)
	var n float64
	for t, m := range mask {
		if m == 0 {
			continue
		}
		n++
		row := hidden[t*dim : (t+1)*dim]
		for i, v := range row {
			acc[i] += float64(v)
		}
	}
	n = max(n, 1e-9)
	for i := range out {
		out[i] = float32(acc[i] / n)
	}
}

// Normalize scales v to unit L2 norm in place (norm clamped at 1e-12, like
// torch.nn.functional.normalize).
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := max(math.Sqrt(s), 1e-12)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
}

// Cosine is the cosine similarity of a and b (0 if either is zero), summed
// in float64; b must be at least as long as a.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// Norm is the L2 norm of v.
func Norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// Dot is the inner product of a and b in float32 with eight independent
// sums, sum j taking the products of elements j, j+8, j+16, … (the dense
// scan's inner loop; for unit vectors it is their cosine); elements past the
// last multiple of eight go to sum 0, and the sums are added pairwise. On
// amd64 the eight sums are two SSE registers (dotBlocks, dot_amd64.s) whose
// lanes round exactly as the scalar sums do (a product rounded to float32,
// then the sum, no fused multiply-add), so the result is bit for bit the
// portable loop's (dotBlocksGo) at a fraction of its time. b must be at least
// as long as a.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s [8]float32
	n := len(a) / 8
	if n > 0 {
		dotBlocks(&a[0], &b[0], n, &s)
	}
	for i := n * 8; i < len(a); i++ {
		s[0] += a[i] * b[i]
	}
	return (s[0] + s[1]) + (s[2] + s[3]) + (s[4] + s[5]) + (s[6] + s[7])
}

// dotBlocksGo adds to s the products of the first 8·n elements of a and b,
// element i to s[i%8]: dotBlocks in Go.
func dotBlocksGo(a, b []float32, n int, s *[8]float32) {
	a, b = a[:8*n], b[:8*n]
	for i := 0; i+8 <= len(a); i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s[0] += aa[0] * bb[0]
		s[1] += aa[1] * bb[1]
		s[2] += aa[2] * bb[2]
		s[3] += aa[3] * bb[3]
		s[4] += aa[4] * bb[4]
		s[5] += aa[5] * bb[5]
		s[6] += aa[6] * bb[6]
		s[7] += aa[7] * bb[7]
	}
}

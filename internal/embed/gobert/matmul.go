package gobert

import (
	"runtime"
	"sync"
)

// parallelFor runs fn over [0, n) split into contiguous chunks, one per
// worker, each chunk a multiple of align (except the last).
func parallelFor(n, align, workers int, fn func(lo, hi int)) {
	if workers <= 1 || n <= align {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	chunk = (chunk + align - 1) / align * align
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		if hi == n && lo == 0 {
			fn(lo, hi)
			break
		}
		wg.Go(func() { fn(lo, hi) })
	}
	wg.Wait()
}

func workers() int { return runtime.GOMAXPROCS(0) }

// linear computes y[m, out] = x[m, in] · Wᵀ + b, with w in [out, in]
// layout. Rows of x are split across goroutines.
func linear(y, x, w, b []float32, m, in, out int) {
	parallelFor(m, 4, workers(), func(lo, hi int) {
		matmulABt(y[lo*out:hi*out], x[lo*in:hi*in], w, hi-lo, in, out)
	})
	if b != nil {
		for i := range m {
			row := y[i*out : (i+1)*out]
			for j, v := range b {
				row[j] += v
			}
		}
	}
}

// matmulABt computes c[m, n] = a[m, k] · bᵀ where b is [n, k]: every output
// is a dot product of two contiguous rows. A 4×4 register block keeps 16
// accumulators and reuses each loaded value four times.
func matmulABt(c, a, b []float32, m, k, n int) {
	i := 0
	for ; i+4 <= m; i += 4 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		a2 := a[(i+2)*k : (i+2)*k+k]
		a3 := a[(i+3)*k : (i+3)*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			var s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33 float32
			for p := range a0 {
				x0, x1, x2, x3 := a0[p], a1[p], a2[p], a3[p]
				y0, y1, y2, y3 := b0[p], b1[p], b2[p], b3[p]
				s00 += x0 * y0
				s01 += x0 * y1
				s02 += x0 * y2
				s03 += x0 * y3
				s10 += x1 * y0
				s11 += x1 * y1
				s12 += x1 * y2
				s13 += x1 * y3
				s20 += x2 * y0
				s21 += x2 * y1
				s22 += x2 * y2
				s23 += x2 * y3
				s30 += x3 * y0
				s31 += x3 * y1
				s32 += x3 * y2
				s33 += x3 * y3
			}
			c[i*n+j], c[i*n+j+1], c[i*n+j+2], c[i*n+j+3] = s00, s01, s02, s03
			c[(i+1)*n+j], c[(i+1)*n+j+1], c[(i+1)*n+j+2], c[(i+1)*n+j+3] = s10, s11, s12, s13
			c[(i+2)*n+j], c[(i+2)*n+j+1], c[(i+2)*n+j+2], c[(i+2)*n+j+3] = s20, s21, s22, s23
			c[(i+3)*n+j], c[(i+3)*n+j+1], c[(i+3)*n+j+2], c[(i+3)*n+j+3] = s30, s31, s32, s33
		}
		for ; j < n; j++ {
			bj := b[j*k : j*k+k]
			c[i*n+j] = dot(a0, bj)
			c[(i+1)*n+j] = dot(a1, bj)
			c[(i+2)*n+j] = dot(a2, bj)
			c[(i+3)*n+j] = dot(a3, bj)
		}
	}
	for ; i < m; i++ {
		ai := a[i*k : i*k+k]
		for j := range n {
			c[i*n+j] = dot(ai, b[j*k:j*k+k])
		}
	}
}

// dot is matmulABt's kernel for the rows and columns left over from its
// 4×4 blocks. It is a copy of vecmath.Dot's idea kept apart on purpose: it is
// part of the pure-Go model's arithmetic, not a similarity, and its four
// partial sums fix the rounding of those outputs, so the model's vectors stay
// the ones its tests pin against the reference; vecmath.Dot's eight sums
// would round them differently.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	p := 0
	for ; p+4 <= len(a); p += 4 {
		s0 += a[p] * b[p]
		s1 += a[p+1] * b[p+1]
		s2 += a[p+2] * b[p+2]
		s3 += a[p+3] * b[p+3]
	}
	for ; p < len(a); p++ {
		s0 += a[p] * b[p]
	}
	return (s0 + s1) + (s2 + s3)
}

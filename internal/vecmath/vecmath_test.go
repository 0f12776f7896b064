package vecmath

import (
	"math"
	"testing"
)

func TestMeanPoolNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		hidden []float32
		mask   []int64
		want   []float32
	}{
		{"all", []float32{1, 2, 3, 4}, []int64{1, 1}, []float32{2, 3}},
		{"masked", []float32{1, 2, 30, 40}, []int64{1, 0}, []float32{1, 2}},
		{"none", []float32{1, 2}, []int64{0}, []float32{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := make([]float32, 2)
			MeanPool(out, tt.hidden, tt.mask, 2)
			for i := range out {
				if out[i] != tt.want[i] {
					t.Fatalf("MeanPool = %v, want %v", out, tt.want)
				}
			}
			Normalize(out)
			if n := Norm(out); n != 0 && math.Abs(n-1) > 1e-6 {
				t.Fatalf("norm %v", n)
			}
		})
	}
	if c := Cosine([]float32{1, 0}, []float32{0, 1}); c != 0 {
		t.Errorf("orthogonal cosine %v", c)
	}
	if c := Cosine([]float32{1, 1}, []float32{2, 2}); math.Abs(c-1) > 1e-12 {
		t.Errorf("parallel cosine %v", c)
	}
	if c := Cosine([]float32{0, 0}, []float32{2, 2}); c != 0 {
		t.Errorf("zero cosine %v", c)
	}
}

func TestDot(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 7, 8, 9, 384} {
		a, b := make([]float32, n), make([]float32, n+3) // b may be longer
		var want float64
		for i := range a {
			a[i], b[i] = float32(i%5)-2, float32(i%3)+0.5
			want += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); math.Abs(float64(got)-want) > 1e-3 {
			t.Errorf("Dot of %d = %v, want %v", n, got, want)
		}
	}
	u := []float32{0.6, 0.8, 0, 0, 0, 0, 0, 0, 0}
	if c, d := Cosine(u, u), Dot(u, u); math.Abs(c-1) > 1e-6 || math.Abs(float64(d)-1) > 1e-6 {
		t.Errorf("unit vector with itself: Cosine %v, Dot %v", c, d)
	}
}

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

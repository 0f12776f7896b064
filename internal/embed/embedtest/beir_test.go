package embedtest

import (
	"math"
	"testing"
)

func TestNDCGAt(t *testing.T) {
	t.Parallel()
	qrels := map[string]map[string]int{"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
	tests := []struct {
		name   string
		ranked map[string][]string
		want   float64
	}{
		{"perfect", map[string][]string{"q1": {"a", "b"}, "q2": {"c"}}, 1},
		{"none", map[string][]string{"q1": {"x"}, "q2": {}}, 0},
		{"second place", map[string][]string{"q1": {"a", "b"}, "q2": {"x", "c"}}, (1 + 1/math.Log2(3)) / 2},
	}
	for _, tt := range tests {
		if got := NDCGAt(10, qrels, tt.ranked); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: nDCG = %v, want %v", tt.name, got, tt.want)
		}
	}
}

package rank

import (
	"math"
	"testing"
)

func TestQueryMaxBM25(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		bounds []float64
		want   float64
	}{
		{"no terms", nil, 0},
		{"no term matches", []float64{0, 0}, 0},
		{"every term matches", []float64{2, 3}, 5},
		{"a missing term counts as the mean of the others", []float64{2, 4, 0}, 9},
	} {
		if got := QueryMaxBM25(tc.bounds); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: QueryMaxBM25(%v) = %v, want %v", tc.name, tc.bounds, got, tc.want)
		}
	}
}

func TestKeywordAndConvexScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bm25, kwMax, want float64
	}{{0, 5, 0}, {-1, 5, 0}, {2, 0, 0}, {2.5, 5, 0.5}, {7, 5, 1}} {
		if got := KeywordScore(tc.bm25, tc.kwMax); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("KeywordScore(%v, %v) = %v, want %v", tc.bm25, tc.kwMax, got, tc.want)
		}
	}
	for _, tc := range []struct {
		alpha, dense, kw, want float64
	}{{0.5, 0.8, 0.4, 0.6}, {0.5, -0.3, 0.4, 0.2}, {1, 0.7, 0.9, 0.7}, {0.25, 0.4, 0.8, 0.7}} {
		if got := ConvexScore(tc.alpha, tc.dense, tc.kw); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ConvexScore(%v, %v, %v) = %v, want %v", tc.alpha, tc.dense, tc.kw, got, tc.want)
		}
	}
}

func TestRRF(t *testing.T) {
	t.Parallel()
	if got := RRF(1, DefaultRRFK, 1); got != 1.0/61 {
		t.Errorf("RRF(1, 60, 1) = %v", got)
	}
	// Memory weighs lists: the same value as dividing the weight by the
	// integer k+rank, bit for bit.
	for r := 1; r < 200; r++ {
		if got, want := RRF(0.3, DefaultRRFK, r), 0.3/float64(DefaultRRFK+r); got != want {
			t.Fatalf("RRF(0.3, 60, %d) = %v, want %v", r, got, want)
		}
	}
	if RRF(1, 5, 1) <= RRF(1, 5, 2) {
		t.Error("RRF does not fall with the rank")
	}
}

func TestCoveredKeyword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bounds []float64
		want   float64
	}{{nil, 0}, {[]float64{0, 0}, 0}, {[]float64{2, 3}, 1}, {[]float64{2, 0, 0}, 1.0 / 3}} {
		if got := QueryCoverage(tc.bounds); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("QueryCoverage(%v) = %v, want %v", tc.bounds, got, tc.want)
		}
	}
	for _, tc := range []struct{ kw, cover, want float64 }{{0, 1, 0}, {1, 1, 1}, {0.5, 1, 0.5}, {1.0 / 3, 1.0 / 3, 1.0 / 9}, {-1, 1, 0}, {2, 2, 1}} {
		if got := CoveredKeyword(tc.kw, tc.cover); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("CoveredKeyword(%v, %v) = %v, want %v", tc.kw, tc.cover, got, tc.want)
		}
	}
	// The report's case (issue 20): a dense match of 0.481 without keywords
	// beats 0.338 whose one match is the one query word of three that the
	// capsule holds.
	bounds := []float64{0, 0.7, 0}
	kw := KeywordScore(0.7, QueryMaxBM25(bounds))
	if tides, volcano := ConvexScore(0.5, 0.481, 0), ConvexScore(0.5, 0.338, CoveredKeyword(kw, QueryCoverage(bounds))); tides <= volcano {
		t.Errorf("tides %v <= volcano %v", tides, volcano)
	}
}

func TestRecencyScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ score, weight, decay, want float64 }{
		{0, 0.3, 1, 0},      // no relevance stays none, however new
		{0.5, 0.3, 1, 0.5},  // new: the relevance
		{0.5, 0.3, 0, 0.35}, // old: at least 1−weight of it
		{0.5, 1, 0.5, 0.25}, // weight 1: relevance × decay
		{0.5, 0, 0, 0.5},    // weight 0: no effect
		{2, 0.3, 2, 1},      // clamped
	} {
		if got := RecencyScore(tc.score, tc.weight, tc.decay); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("RecencyScore(%v, %v, %v) = %v, want %v", tc.score, tc.weight, tc.decay, got, tc.want)
		}
	}
}

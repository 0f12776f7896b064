package vecmath

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
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

// refDot is Dot as the portable loop computes it: eight float32 sums,
// the tail into sum 0, pairwise reduction.
func refDot(a, b []float32) float32 {
	var s [8]float32
	n := len(a) / 8
	dotBlocksGo(a, b, n, &s)
	for i := n * 8; i < len(a); i++ {
		s[0] += a[i] * b[i]
	}
	return (s[0] + s[1]) + (s[2] + s[3]) + (s[4] + s[5]) + (s[6] + s[7])
}

// TestDotBitIdentical checks that Dot (on amd64 the assembly) rounds
// exactly as the portable loop: rankings and ties depend on the last bit.
func TestDotBitIdentical(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-40, 3.4e38, -3.4e38, float32(math.Inf(1))}
	for trial := range 4000 {
		n := rng.IntN(70)
		if trial%10 == 0 {
			n = 384
		}
		off := rng.IntN(3) // unaligned starts
		a, b := make([]float32, n+off), make([]float32, n+off+rng.IntN(4))
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
		}
		if trial%7 == 0 && n > 0 {
			a[off+rng.IntN(n)] = special[rng.IntN(len(special))]
		}
		got, want := Dot(a[off:], b[off:]), refDot(a[off:], b[off:off+n])
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("trial %d, n %d: Dot = %v (%#x), the portable loop %v (%#x)", trial, n, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

func BenchmarkDot384(b *testing.B) {
	x, y := make([]float32, 384), make([]float32, 384)
	for i := range x {
		x[i], y[i] = float32(i%7)*0.1, float32(i%5)*0.2
	}
	var sink float32
	b.Run("dot", func(b *testing.B) {
		for b.Loop() {
			sink += Dot(x, y)
		}
	})
	b.Run("portable", func(b *testing.B) {
		for b.Loop() {
			sink += refDot(x, y)
		}
	})
	_ = sink
}

// TestChecksumPortable checks Checksum against the CRC-32C of the stored
// bytes, through the in-memory bytes (little-endian machines) and through
// the encoding loop that other machines take.
func TestChecksumPortable(t *testing.T) {
	defer func(le bool) { littleEndian = le }(littleEndian)
	for _, le := range []bool{littleEndian, false} {
		littleEndian = le
		checksumCases(t)
	}
}

func checksumCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 700 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		b := make([]byte, 4*n)
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		want := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
		if got := Checksum(v); got != want {
			t.Fatalf("n %d: Checksum %08x, want %08x", n, got, want)
		}
		if got := ChecksumBytes(ChecksumUpdate(0, v[:n/2]), b[4*(n/2):]); got != want {
			t.Fatalf("n %d: in two parts %08x, want %08x", n, got, want)
		}
	}
}

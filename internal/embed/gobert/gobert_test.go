package gobert

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"capsuled/internal/embed/bert"
	"capsuled/internal/embed/embedtest"
	"capsuled/internal/embed/wordpiece"
	"capsuled/internal/vecmath"
)

func TestMatmulABt(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct{ m, k, n int }{{1, 1, 1}, {4, 8, 4}, {5, 7, 9}, {13, 32, 6}, {16, 384, 12}}
	for _, tt := range tests {
		a := make([]float32, tt.m*tt.k)
		b := make([]float32, tt.n*tt.k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		c := make([]float32, tt.m*tt.n)
		matmulABt(c, a, b, tt.m, tt.k, tt.n)
		for i := range tt.m {
			for j := range tt.n {
				var want float64
				for p := range tt.k {
					want += float64(a[i*tt.k+p]) * float64(b[j*tt.k+p])
				}
				if got := float64(c[i*tt.n+j]); math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
					t.Fatalf("%v: c[%d,%d] = %v, want %v", tt, i, j, got, want)
				}
			}
		}
	}
}

func tinyEmbedder(t *testing.T) *Embedder {
	t.Helper()
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
		"the", "cat", "sat", "on", "mat", "dog", "ran", "a", "far", "##s", ".", ","}
	cfg := bert.TinyConfig()
	cfg.VocabSize = len(vocab)
	tok, err := wordpiece.New(vocab)
	if err != nil {
		t.Fatal(err)
	}
	return NewFromWeights(tok, bert.Random(cfg, 7), Config{MaxLen: 16})
}

// TestTinyBatchInvariance checks padding and batching on a random model:
// a text's vector does not depend on the batch it runs in.
func TestTinyBatchInvariance(t *testing.T) {
	t.Parallel()
	e := tinyEmbedder(t)
	texts := []string{"the cat sat on the mat.", "a dog", "", "dogs ran far, far, far, far, far, far, far, far, far"}
	batch, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		one, err := e.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if c := vecmath.Cosine(batch[i], one[0]); c < 0.99999 {
			t.Errorf("%q: batch vs alone cosine %v", text, c)
		}
		if n := vecmath.Norm(one[0]); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: norm %v", text, n)
		}
	}
}

func TestSuite(t *testing.T) {
	dir := embedtest.ModelDir(t)
	if raceEnabled {
		t.Skip("the real-model suite is too slow under the race detector (minutes of pure-Go BERT); run it without -race. TestTinyConcurrent covers concurrency under -race")
	}
	e, err := New(context.Background(), Config{ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	embedtest.Run(t, e, embedtest.Options{})
}

// TestTinyConcurrent runs callers in parallel on a random model: results
// match the sequential ones (the race detector checks the sharing).
func TestTinyConcurrent(t *testing.T) {
	t.Parallel()
	e := tinyEmbedder(t)
	texts := []string{"the cat sat", "a dog ran far", "mats", ""}
	want, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range got {
				if c := vecmath.Cosine(got[i], want[i]); c < 0.99999 {
					t.Errorf("%q: concurrent cosine %v", texts[i], c)
				}
			}
		})
	}
	wg.Wait()
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no dir", Config{}},
		{"empty dir", Config{ModelDir: t.TempDir()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(context.Background(), tt.cfg); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
}

func benchEmbedder(b *testing.B) *Embedder {
	e, err := New(context.Background(), Config{ModelDir: embedtest.ModelDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// Throughput benchmarks:
//
//	go test -run '^$' -bench BenchmarkEmbed -benchtime 3x ./internal/embed/gobert
func BenchmarkEmbedSentences(b *testing.B) {
	embedtest.BenchSentences(b, benchEmbedder(b), 32)
}

func BenchmarkEmbedChunks(b *testing.B) {
	e := benchEmbedder(b)
	embedtest.BenchChunks(b, e, 16, e.Tokenizer().CountTokens)
}

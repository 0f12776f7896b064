package openaihttp

import (
	"context"
	"math"
	"os"
	"testing"
	"time"
)

// TestLlamaServerEmbeddings runs the embedder against a real server:
// llama.cpp's llama-server with --embeddings, which `bash .ci/llama.sh`
// starts (CI does); skipped when CAPSULED_TEST_LLAMA_EMBED is not set. The
// model (Gemma 3 270M, mean-pooled) is no embedding model: the test checks
// the protocol (dimension learned, one unit vector per text, in order, the
// same text the same vector), not the vectors' meaning.
func TestLlamaServerEmbeddings(t *testing.T) {
	url := os.Getenv("CAPSULED_TEST_LLAMA_EMBED")
	if url == "" {
		t.Skip("CAPSULED_TEST_LLAMA_EMBED is not set: run `bash .ci/llama.sh` and source .cache/llama/env.sh to run the tests against a real model server")
	}
	model := os.Getenv("CAPSULED_TEST_LLAMA_MODEL")
	ctx := context.Background()
	e, err := New(ctx, Config{URL: url, Model: model, BatchSize: 2, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Dim() < 64 {
		t.Fatalf("dimension %d", e.Dim())
	}
	texts := []string{"bees in Porto", "the tides of the Atlantic", "bees in Porto"}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 {
		t.Fatalf("%d vectors", len(vs))
	}
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != e.Dim() || math.Abs(math.Sqrt(n)-1) > 1e-3 {
			t.Fatalf("vector %d: dim %d norm %f", i, len(v), math.Sqrt(n))
		}
	}
	var same, diff float64
	for j := range vs[0] {
		same += float64(vs[0][j]) * float64(vs[2][j])
		diff += float64(vs[0][j]) * float64(vs[1][j])
	}
	if same < 0.999 || diff > same {
		t.Fatalf("cosine of the same text %f, of two texts %f", same, diff)
	}
	t.Logf("llama-server embeddings: dim %d, cos(same) %.4f, cos(other) %.4f", e.Dim(), same, diff)
}

package chunk

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"capsuled/internal/embed/wordpiece"
	"capsuled/internal/ingest/parse"
)

// realTokenizer loads the embedding model's vocabulary from
// CAPSULED_MODEL_DIR (see .ci/fetch-model.sh), or skips.
func realTokenizer(tb testing.TB) *wordpiece.Tokenizer {
	tb.Helper()
	dir := os.Getenv("CAPSULED_MODEL_DIR")
	if dir == "" {
		tb.Skip("CAPSULED_MODEL_DIR is not set: run .ci/fetch-model.sh and source .cache/env.sh")
	}
	tok, err := wordpiece.Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// TestChunkWithWordPiece checks the budget promise with the real tokenizer,
// and that sums of sentence counts match the chunk counts (so the final
// re-measure rarely has to shrink a chunk).
func TestChunkWithWordPiece(t *testing.T) {
	tok := realTokenizer(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for range 100 {
		doc := mustExtract(t, "r.md", randomDoc(rng))
		opts := Options{MaxTokens: 16 + rng.IntN(240), OverlapTokens: rng.IntN(40), HeadingContext: true}
		checkChunks(t, doc, tok, opts, Split(doc, tok, opts))
	}
	for _, name := range []string{"sample.md", "sample.html", "sample.pdf", "sample.docx", "sample.csv", "sample.go"} {
		doc, err := parse.Extract(context.Background(), strings.NewReader(string(readFixture(t, name))), name, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{MaxTokens: 24, HeadingContext: true}
		checkChunks(t, doc, tok, opts, Split(doc, tok, opts))
	}
}

// BenchmarkChunkPlainTextWordPiece is BenchmarkChunkPlainText with the
// embedding model's own tokenizer.
func BenchmarkChunkPlainTextWordPiece(b *testing.B) {
	tok := realTokenizer(b)
	doc, err := parse.Extract(context.Background(), strings.NewReader(benchText(1<<20)), "b.txt", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	b.SetBytes(int64(len(doc.Text)))
	b.ResetTimer()
	for b.Loop() {
		n += len(Split(doc, tok, Options{HeadingContext: true}))
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkCountTokensWordPiece is the tokenizer alone over the same text,
// the floor under chunking cost.
func BenchmarkCountTokensWordPiece(b *testing.B) {
	tok := realTokenizer(b)
	text := benchText(1 << 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.CountTokens(text)
	}
}

package memory

import (
	"context"
	"unicode"
)

// Embedder turns texts into vectors (real ones live in internal/embed).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	ModelID() string
}

// TokenCounter counts the tokens of a text (the WordPiece tokenizer of the
// embedding model, or ApproxTokens).
type TokenCounter interface {
	CountTokens(text string) int
}

// ApproxTokens estimates WordPiece tokens without a vocabulary: one per
// punctuation mark and one per word plus one per further six letters of
// it. It errs high on purpose, so a budget is not overrun.
type ApproxTokens struct{}

// CountTokens estimates the tokens of text.
func (ApproxTokens) CountTokens(text string) int {
	n, word := 0, 0
	flush := func() {
		if word > 0 {
			n += 1 + (word-1)/6
			word = 0
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word++
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

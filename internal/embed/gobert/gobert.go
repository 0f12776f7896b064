package gobert

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"capsuled/internal/embed/bert"
	"capsuled/internal/embed/encbatch"
	"capsuled/internal/embed/wordpiece"
)

// Config configures a pure-Go embedder.
type Config struct {
	// ModelDir is a sentence-transformers folder with config.json,
	// model.safetensors and vocab.txt (or tokenizer.json). Required.
	ModelDir string
	// ModelID is what ModelID returns. Default "all-MiniLM-L6-v2": the
	// vectors agree with the ONNX Runtime fp32 ones to rounding.
	ModelID string
	// MaxLen is the longest sequence in word pieces, [CLS] and [SEP]
	// included. Default 256.
	MaxLen int
	// BatchSize is the most texts computed together. Default 16.
	BatchSize int
	// MaxBatchTokens bounds a batch's padded size (rows × sequence).
	// Default 4096.
	MaxBatchTokens int
}

func (c Config) withDefaults() Config {
	if c.ModelID == "" {
		c.ModelID = "all-MiniLM-L6-v2"
	}
	if c.MaxLen <= 0 {
		c.MaxLen = 256
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 16
	}
	if c.MaxBatchTokens <= 0 {
		c.MaxBatchTokens = 4096
	}
	return c
}

// Embedder embeds texts with a pure-Go BERT forward pass. Safe for
// concurrent use; batches run one at a time, each using every core.
type Embedder struct {
	cfg Config
	tok *wordpiece.Tokenizer
	w   *bert.Weights
	mu  sync.Mutex // one forward pass at a time: each already uses all cores
}

// New loads the tokenizer and the weights.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	cfg = cfg.withDefaults()
	if cfg.ModelDir == "" {
		return nil, errors.New("gobert: Config.ModelDir is required")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tok, err := wordpiece.Load(cfg.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("gobert: %w", err)
	}
	w, err := bert.Load(cfg.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("gobert: %w", err)
	}
	if tok.VocabSize() != w.VocabSize {
		return nil, fmt.Errorf("gobert: vocabulary has %d pieces, model %d", tok.VocabSize(), w.VocabSize)
	}
	return &Embedder{cfg: cfg, tok: tok, w: w}, nil
}

// NewFromWeights builds an embedder from weights already in memory (tests,
// random models).
func NewFromWeights(tok *wordpiece.Tokenizer, w *bert.Weights, cfg Config) *Embedder {
	return &Embedder{cfg: cfg.withDefaults(), tok: tok, w: w}
}

// Dim is the embedding width.
func (e *Embedder) Dim() int { return e.w.HiddenSize }

// ModelID names the model and its numerics, for embedding caches.
func (e *Embedder) ModelID() string { return e.cfg.ModelID }

// Tokenizer is the tokenizer the embedder uses.
func (e *Embedder) Tokenizer() *wordpiece.Tokenizer { return e.tok }

// HasWord reports whether word is a whole word of the model's vocabulary
// (retrieval.WordKnower).
func (e *Embedder) HasWord(word string) bool { return e.tok.HasWord(word) }

// Close releases nothing: the weights are ordinary Go memory.
func (e *Embedder) Close() error { return nil }

// Embed returns one L2-normalised vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	encs := make([]wordpiece.Encoding, len(texts))
	for i, t := range texts {
		encs[i] = e.tok.Encode(t, e.cfg.MaxLen)
		if encs[i].Len() > e.w.MaxPositions {
			return nil, fmt.Errorf("gobert: sequence of %d exceeds the model's %d positions", encs[i].Len(), e.w.MaxPositions)
		}
	}
	for _, b := range encbatch.Plan(encs, e.cfg.BatchSize, e.cfg.MaxBatchTokens, e.tok.PadID()) {
		vs, err := e.run(ctx, b)
		if err != nil {
			return nil, err
		}
		for r, idx := range b.Index {
			out[idx] = vs[r]
		}
	}
	return out, nil
}

func (e *Embedder) run(ctx context.Context, b encbatch.Batch) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return forward(ctx, e.w, b)
}

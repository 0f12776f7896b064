//go:build !cgo

package ort

import (
	"context"

	"capsuled/internal/embed/wordpiece"
)

// Available reports whether this build can run ONNX Runtime: false without
// cgo.
const Available = false

// Embedder is unavailable without cgo.
type Embedder struct{}

// New always fails in a build without cgo: ONNX Runtime is a C library.
func New(ctx context.Context, cfg Config) (*Embedder, error) { return nil, ErrNeedsCgo }

// Embed is never reached: New fails.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return nil, ErrNeedsCgo
}

// Dim is 0: New fails.
func (e *Embedder) Dim() int { return 0 }

// ModelID is empty: New fails.
func (e *Embedder) ModelID() string { return "" }

// Tokenizer is nil: New fails.
func (e *Embedder) Tokenizer() *wordpiece.Tokenizer { return nil }

// Close does nothing.
func (e *Embedder) Close() error { return nil }

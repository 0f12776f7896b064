//go:build cgo

package ort

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	onnx "github.com/yalue/onnxruntime_go"

	"capsuled/internal/embed/encbatch"
	"capsuled/internal/embed/wordpiece"
	"capsuled/internal/vecmath"
)

// Available reports whether this build can run ONNX Runtime: true in a cgo
// build.
const Available = true

// envMu guards the process-global ONNX Runtime environment, which
// onnxruntime_go keeps in package variables: initialising it twice, or
// from two goroutines at once, fails.
var envMu sync.Mutex

// initEnv loads the shared library and creates the environment once per
// process. A second library path cannot replace the first.
func initEnv(lib string) error {
	envMu.Lock()
	defer envMu.Unlock()
	if onnx.IsInitialized() {
		return nil
	}
	onnx.SetSharedLibraryPath(lib)
	if err := onnx.InitializeEnvironment(onnx.WithLogLevelError()); err != nil {
		return fmt.Errorf("ort: load %s: %w", lib, err)
	}
	return nil
}

// Embedder embeds texts with an ONNX model. Safe for concurrent use.
type Embedder struct {
	cfg     Config
	tok     *wordpiece.Tokenizer
	sess    *onnx.DynamicAdvancedSession
	inputs  []string // model inputs, in the order tensors are passed
	pooled  bool     // output is sentence_embedding (pooled, normalised)
	dim     int
	sem     chan struct{}
	closeMu sync.RWMutex
	closed  bool
}

// New loads the tokenizer and the model and creates the session.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	cfg = cfg.withDefaults()
	if cfg.ModelDir == "" {
		return nil, errors.New("ort: Config.ModelDir is required")
	}
	lib, err := FindLibrary(cfg.ORTLibrary)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tok, err := wordpiece.Load(cfg.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("ort: %w", err)
	}
	if err := initEnv(lib); err != nil {
		return nil, err
	}
	path := cfg.modelPath()
	ins, outs, err := onnx.GetInputOutputInfo(path)
	if err != nil {
		return nil, fmt.Errorf("ort: read %s: %w", path, err)
	}
	e := &Embedder{cfg: cfg, tok: tok, sem: make(chan struct{}, cfg.Parallel)}
	for _, in := range ins {
		switch in.Name {
		case "input_ids", "attention_mask", "token_type_ids":
			e.inputs = append(e.inputs, in.Name)
		default:
			return nil, fmt.Errorf("ort: %s: unexpected input %q", path, in.Name)
		}
	}
	if !slices.Contains(e.inputs, "input_ids") || !slices.Contains(e.inputs, "attention_mask") {
		return nil, fmt.Errorf("ort: %s: needs inputs input_ids and attention_mask, has %v", path, e.inputs)
	}
	output := ""
	for _, o := range outs {
		dims := o.Dimensions
		switch {
		case o.Name == "sentence_embedding" && len(dims) == 2:
			output, e.pooled, e.dim = o.Name, true, int(dims[1])
		case o.Name == "last_hidden_state" && len(dims) == 3 && output == "":
			output, e.dim = o.Name, int(dims[2])
		}
	}
	if output == "" || e.dim <= 0 {
		return nil, fmt.Errorf("ort: %s: no sentence_embedding [batch, dim] or last_hidden_state [batch, seq, dim] output", path)
	}
	opts, err := onnx.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("ort: session options: %w", err)
	}
	defer opts.Destroy()
	for _, set := range []func() error{
		func() error { return opts.SetIntraOpNumThreads(cfg.IntraOpThreads) },
		func() error { return opts.SetInterOpNumThreads(1) },
		func() error { return opts.SetExecutionMode(onnx.ExecutionModeSequential) },
		func() error { return opts.SetGraphOptimizationLevel(onnx.GraphOptimizationLevelEnableAll) },
		func() error {
			spin := "0"
			if cfg.Spin {
				spin = "1"
			}
			return opts.AddSessionConfigEntry("session.intra_op.allow_spinning", spin)
		},
	} {
		if err := set(); err != nil {
			return nil, fmt.Errorf("ort: session options: %w", err)
		}
	}
	e.sess, err = onnx.NewDynamicAdvancedSession(path, e.inputs, []string{output}, opts)
	if err != nil {
		return nil, fmt.Errorf("ort: load %s: %w", path, err)
	}
	return e, nil
}

// Dim is the embedding width (384 for all-MiniLM-L6-v2).
func (e *Embedder) Dim() int { return e.dim }

// ModelID names the model and its numerics, for embedding caches.
func (e *Embedder) ModelID() string { return e.cfg.ModelID }

// Tokenizer is the tokenizer the embedder uses.
func (e *Embedder) Tokenizer() *wordpiece.Tokenizer { return e.tok }

// HasWord reports whether word is a whole word of the model's vocabulary
// (retrieval.WordKnower).
func (e *Embedder) HasWord(word string) bool { return e.tok.HasWord(word) }

// Close releases the session. The embedder must not be used afterwards;
// calls in flight finish first.
func (e *Embedder) Close() error {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if err := e.sess.Destroy(); err != nil {
		return fmt.Errorf("ort: close: %w", err)
	}
	return nil
}

// Embed returns one L2-normalised vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		return nil, errors.New("ort: embedder is closed")
	}
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	encs := make([]wordpiece.Encoding, len(texts))
	for i, t := range texts {
		encs[i] = e.tok.Encode(t, e.cfg.MaxLen)
	}
	for _, b := range encbatch.Plan(encs, e.cfg.BatchSize, e.cfg.MaxBatchTokens, e.tok.PadID()) {
		if err := e.run(ctx, b, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// run embeds one batch into out.
func (e *Embedder) run(ctx context.Context, b encbatch.Batch, out [][]float32) error {
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.sem }()
	if err := ctx.Err(); err != nil {
		return err
	}
	shape := onnx.NewShape(int64(b.Rows()), int64(b.Seq))
	data := map[string][]int64{"input_ids": b.IDs, "attention_mask": b.AttentionMask, "token_type_ids": b.TypeIDs}
	inputs := make([]onnx.Value, len(e.inputs))
	for i, name := range e.inputs {
		t, err := onnx.NewTensor(shape, data[name])
		if err != nil {
			return fmt.Errorf("ort: input tensor: %w", err)
		}
		defer t.Destroy()
		inputs[i] = t
	}
	var outShape onnx.Shape
	if e.pooled {
		outShape = onnx.NewShape(int64(b.Rows()), int64(e.dim))
	} else {
		outShape = onnx.NewShape(int64(b.Rows()), int64(b.Seq), int64(e.dim))
	}
	res, err := onnx.NewEmptyTensor[float32](outShape)
	if err != nil {
		return fmt.Errorf("ort: output tensor: %w", err)
	}
	defer res.Destroy()
	if err := e.sess.Run(inputs, []onnx.Value{res}); err != nil {
		return fmt.Errorf("ort: run batch of %d×%d: %w", b.Rows(), b.Seq, err)
	}
	flat := res.GetData()
	for r, idx := range b.Index {
		v := make([]float32, e.dim)
		if e.pooled {
			copy(v, flat[r*e.dim:(r+1)*e.dim])
		} else {
			vecmath.MeanPool(v, flat[r*b.Seq*e.dim:(r+1)*b.Seq*e.dim], b.AttentionMask[r*b.Seq:(r+1)*b.Seq], e.dim)
		}
		vecmath.Normalize(v) // idempotent for the pooled output, up to rounding
		out[idx] = v
	}
	return nil
}

package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"capsuled/api"
	"capsuled/internal/capsule"
	"capsuled/internal/embed/ort"
	"capsuled/internal/ingest"
	"capsuled/internal/retrieval"
)

// CapsulesConfig configures capsules: ingestion, the embedder and retrieval.
type CapsulesConfig struct {
	// Embedder selects the embedding backend: "auto" (default: ONNX
	// Runtime when a model and the library are found, else off), "onnx",
	// "off" (keyword search only), or "fake" (a deterministic hashing
	// embedder, FOR TESTS ONLY: its vectors carry no meaning).
	Embedder string
	// ONNXDir is the folder of the converted model (model.onnx, vocab.txt).
	// Default: DataDir/models/all-MiniLM-L6-v2 when present.
	ONNXDir string
	// ModelFile picks the model file in ONNXDir. Default model.onnx.
	ModelFile string
	// ORTLib is libonnxruntime.so. Default: $CAPSULED_ORT_LIB or well-known
	// places.
	ORTLib string
	// Workers is the number of ingestion workers. Default 1.
	Workers int
	// Fusion is the hybrid fusion: convex (default) or rrf.
	Fusion string
	// Alpha is the dense weight of the convex fusion. Default 0.6.
	Alpha float64
	// IngestLease is how long an item claimed for indexing stays claimed
	// before another replica may take it over, on a shared (PostgreSQL)
	// store. Default postgres.DefaultClaimLease.
	IngestLease time.Duration
}

// RegisterFlags adds the capsule settings to a serve command's flags.
func (c *CapsulesConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Embedder, "embedder", "auto", "embedding backend: auto, onnx, off (keyword search only)")
	fs.StringVar(&c.ONNXDir, "onnx-dir", "", "folder of the ONNX model and vocab.txt (default: <data>/models/all-MiniLM-L6-v2)")
	fs.StringVar(&c.ModelFile, "model-file", "", "model file in the ONNX folder (default model.onnx; model_quantized.onnx for int8)")
	fs.StringVar(&c.ORTLib, "ort-lib", "", "path of libonnxruntime.so (default: well-known places)")
	fs.IntVar(&c.Workers, "ingest-workers", 1, "ingestion workers")
	fs.StringVar(&c.Fusion, "fusion", "convex", "hybrid fusion: convex or rrf")
	fs.Float64Var(&c.Alpha, "fusion-alpha", 0, "dense weight of the convex fusion (0: default 0.6)")
	fs.DurationVar(&c.IngestLease, "ingest-lease", 0, "PostgreSQL store: how long a replica's claim on an item being indexed lasts before another replica may take it over (0: 5m)")
}

// newCapsules builds the capsule service (nil: the operations answer 501).
func (a *App) newCapsules(ctx context.Context) (api.Capsules, error) {
	cfg := a.cfg.Capsules
	emb, tokens, closeEmb, err := a.newEmbedder(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if closeEmb != nil {
		a.closers = append(a.closers, closerFunc(closeEmb))
	}
	var ec capsule.Embedder
	if emb != nil {
		ec = emb
		a.log.Info("semantic search on", "embedder", emb.ModelID(), "dim", emb.Dim())
	} else {
		a.log.Warn("SEMANTIC SEARCH IS OFF: no embedding model; capsules serve keyword (BM25) search only, mode semantic answers 422",
			"hint", "run .ci/fetch-model.sh or pass --onnx-dir and --ort-lib")
	}
	svc, err := capsule.New(capsule.Config{
		Store:     a.db.Capsules(),
		Embedder:  ec,
		Tokens:    tokens,
		DataDir:   a.cfg.DataDir,
		Workers:   cfg.Workers,
		Retrieval: retrieval.Config{Fusion: retrieval.Fusion(cfg.Fusion), Alpha: cfg.Alpha},
		Now:       a.cfg.Now,
		Log:       a.log,
	})
	if err != nil {
		return nil, err
	}
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, closerFunc(svc.Close))
	return svc, nil
}

// embedder is what the app needs of an embedding backend.
type embedder interface {
	capsule.Embedder
}

// newEmbedder picks the embedding backend; nil means semantic search is off.
func (a *App) newEmbedder(ctx context.Context, cfg CapsulesConfig) (embedder, ingest.TokenCounter, func() error, error) {
	switch cfg.Embedder {
	case "off":
		return nil, nil, nil, nil
	case "fake":
		a.log.Warn("using the FAKE test embedder: its vectors carry no meaning")
		f := capsule.NewFakeEmbedder(64)
		return f, nil, nil, nil
	case "", "auto", "onnx":
	default:
		return nil, nil, nil, fmt.Errorf("embedder %q: want auto, onnx, off or fake", cfg.Embedder)
	}
	dir := cfg.ONNXDir
	if dir == "" {
		dir = filepath.Join(a.cfg.DataDir, "models", "all-MiniLM-L6-v2")
	}
	if _, err := os.Stat(filepath.Join(dir, "vocab.txt")); err != nil {
		if cfg.Embedder == "onnx" {
			return nil, nil, nil, fmt.Errorf("embedder onnx: no model in %s (vocab.txt: %w)", dir, err)
		}
		return nil, nil, nil, nil
	}
	e, err := ort.New(ctx, ort.Config{ModelDir: dir, ModelFile: cfg.ModelFile, ORTLibrary: cfg.ORTLib})
	if err != nil {
		if cfg.Embedder == "onnx" {
			return nil, nil, nil, fmt.Errorf("embedder onnx: %w", err)
		}
		a.log.Warn("ONNX embedder unavailable", "dir", dir, "err", err)
		return nil, nil, nil, nil
	}
	return e, e.Tokenizer(), e.Close, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

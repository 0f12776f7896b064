package main

import (
	"context"
	"fmt"
	"io"

	"capsuled/internal/app"
)

// runReindex gives every searchable chunk of a store a vector of the
// configured embedding model now: the items ingested while no model was
// configured, and every item when the store's vectors were made by another
// model (docs/ingestion.md, "Vectors and the embedding model").
func runReindex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reindex", stderr)
	var cfg app.Config
	fs.StringVar(&cfg.DataDir, "data", "data", "data directory (database, uploads, models)")
	fs.StringVar(&cfg.Store, "store", "sqlite", "storage backend: sqlite (in the data directory) or a postgres:// URL")
	cfg.Capsules.RegisterFlags(fs)
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn or error")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("reindex takes no arguments (got %q)", fs.Args())
	}
	log, err := newLogger(stderr, "text", *logLevel)
	if err != nil {
		return err
	}
	cfg.Version = version
	drawn := false
	res, err := app.Reindex(ctx, cfg, log, func(done, total int) {
		drawn = true
		progress(stderr, done, total, "items without vectors")
	})
	if drawn {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	if res.From.Model != "" && res.From != res.To {
		fmt.Fprintf(stdout, "embedding model changed from %s to %s: %d vectors of the old model removed\n", res.From, res.To, res.Removed)
	}
	fmt.Fprintf(stdout, "embedded %d items (%d chunks were without vectors) with %s\n", res.Items, res.Chunks, res.To)
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"capsuled/internal/store/postgres"
)

// runIndexes defers the PostgreSQL store's chunk search indexes for a bulk
// load and builds them after it (docs/deploy.md, "Loading a large corpus").
func runIndexes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "defer" && args[0] != "build") {
		return errors.New("usage: capsuled indexes defer|build --store postgres://… [--workers N] [--maintenance-work-mem SIZE] [--hnsw-m N] [--hnsw-ef-construction N]")
	}
	sub := args[0]
	fs := newFlags("indexes "+sub, stderr)
	store := fs.String("store", "", "the PostgreSQL store's URL (postgres://…)")
	workers := fs.Int("workers", 0, "build: parallel maintenance workers of each CREATE INDEX (max_parallel_maintenance_workers; 0: the server's setting)")
	mem := fs.String("maintenance-work-mem", "", "build: maintenance_work_mem of each CREATE INDEX, e.g. 4GB (the HNSW graph is built in memory within it: about 2 kB a 384-d chunk; empty: the server's setting)")
	hnswM := fs.Int("hnsw-m", 0, "build: rebuild chunks_hnsw with this pgvector m (neighbours per node; 0: keep the index's, 16 unless an earlier build changed it)")
	hnswEf := fs.Int("hnsw-ef-construction", 0, "build: rebuild chunks_hnsw with this pgvector ef_construction (0: keep the index's, 64 unless an earlier build changed it)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("indexes %s takes no arguments (got %q)", sub, fs.Args())
	}
	if sub == "defer" && (*hnswM != 0 || *hnswEf != 0) {
		return errors.New("indexes defer: --hnsw-m and --hnsw-ef-construction are build flags")
	}
	if *hnswM < 0 || *hnswEf < 0 {
		return errors.New("indexes build: --hnsw-m and --hnsw-ef-construction must be positive")
	}
	if !strings.HasPrefix(*store, "postgres://") && !strings.HasPrefix(*store, "postgresql://") {
		return errors.New("indexes: --store must be a postgres:// URL (SQLite has no indexes to defer)")
	}
	db, err := postgres.Open(ctx, *store, postgres.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	if sub == "defer" {
		dropped, err := db.DeferIndexes(ctx)
		if err != nil {
			return err
		}
		if len(dropped) == 0 {
			fmt.Fprintln(stdout, "no index to defer (already deferred?)")
			return nil
		}
		fmt.Fprintf(stdout, "deferred %s: dense search scans every chunk and BM25 keyword search fails until `capsuled indexes build`\n", strings.Join(dropped, ", "))
		return nil
	}
	opts := postgres.BuildOptions{Workers: *workers, MaintenanceWorkMem: *mem}
	var built []postgres.IndexBuild
	if *hnswM != 0 || *hnswEf != 0 {
		// The parameters not given stay the index's.
		p, err := db.HNSW(ctx)
		if err != nil {
			return err
		}
		if *hnswM != 0 {
			p.M = *hnswM
		}
		if *hnswEf != 0 {
			p.EfConstruction = *hnswEf
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("indexes build: %w", err)
		}
		if built, err = db.SetHNSW(ctx, p, opts); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "chunks_hnsw: %s\n", p)
	}
	more, err := db.BuildIndexes(ctx, opts)
	built = append(built, more...)
	for _, b := range built {
		fmt.Fprintf(stdout, "built %s in %s\n", b.Name, b.Took.Round(time.Millisecond))
	}
	if err == nil && len(built) == 0 {
		fmt.Fprintln(stdout, "no deferred index to build")
	}
	return err
}

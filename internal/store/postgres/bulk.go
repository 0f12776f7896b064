package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// searchIndexes are the chunk indexes that every insert maintains and a
// bulk load defers: the HNSW graph (most of an insert's cost: about 1.3 ms
// a chunk against 0.1 ms for the row), the BM25 index and the tsvector GIN
// index. Built once over the loaded rows, they cost several times less.
var searchIndexes = []string{"chunks_hnsw", "chunks_bm25", "chunks_tsv"}

// DeferIndexes drops the chunks' search indexes for a bulk load, recording
// each one's definition (pg_get_indexdef) in deferred_indexes in the same
// transaction, and returns the names it dropped. Until BuildIndexes builds
// them again, dense search scores every chunk of a capsule exactly (correct,
// but a scan) and BM25 keyword search fails; ingestion, reads and every
// other search work. Deferring again while indexes are deferred drops
// nothing more.
func (db *DB) DeferIndexes(ctx context.Context) ([]string, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("defer indexes: %w", interpret(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var dropped []string
	for _, name := range searchIndexes {
		var def *string
		if err := tx.QueryRow(ctx, "SELECT pg_get_indexdef(to_regclass($1))", name).Scan(&def); err != nil {
			return nil, fmt.Errorf("defer index %s: %w", name, interpret(err))
		}
		if def == nil {
			continue // absent (chunks_bm25 without pg_textsearch) or deferred
		}
		if _, err := tx.Exec(ctx, "INSERT INTO deferred_indexes (name, definition, deferred_at) VALUES ($1, $2, $3)",
			name, *def, db.now()); err != nil {
			return nil, fmt.Errorf("defer index %s: %w", name, interpret(err))
		}
		if _, err := tx.Exec(ctx, "DROP INDEX "+pgx.Identifier{name}.Sanitize()); err != nil {
			return nil, fmt.Errorf("defer index %s: %w", name, interpret(err))
		}
		dropped = append(dropped, name)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("defer indexes: %w", interpret(err))
	}
	return dropped, nil
}

// BuildOptions tunes BuildIndexes.
type BuildOptions struct {
	// Workers is the session's max_parallel_maintenance_workers: parallel
	// workers of each CREATE INDEX that can use them (HNSW can), besides
	// the leader; bounded by the server's max_parallel_workers. Default 0:
	// the server's setting.
	Workers int
	// MaintenanceWorkMem is the session's maintenance_work_mem ("4GB"):
	// an HNSW graph built within it is built in memory, several times
	// faster than one that overflows it (about 2 kB a 384-dimensional
	// chunk at m 16). Default "": the server's setting.
	MaintenanceWorkMem string
}

// IndexBuild is one index BuildIndexes built, with how long it took.
type IndexBuild struct {
	Name string
	Took time.Duration
}

// BuildIndexes builds every index DeferIndexes deferred from its recorded
// definition, one at a time, each in a transaction that also removes its
// record, with opts' settings local to it. It returns what it built, in
// order (nothing when no index is deferred).
func (db *DB) BuildIndexes(ctx context.Context, opts BuildOptions) ([]IndexBuild, error) {
	rows, err := db.pool.Query(ctx, "SELECT name, definition FROM deferred_indexes ORDER BY deferred_at, name")
	if err != nil {
		return nil, fmt.Errorf("build indexes: %w", interpret(err))
	}
	type deferred struct{ name, def string }
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (deferred, error) {
		var d deferred
		return d, r.Scan(&d.name, &d.def)
	})
	if err != nil {
		return nil, fmt.Errorf("build indexes: %w", interpret(err))
	}
	var built []IndexBuild
	for _, d := range todo {
		t0 := time.Now()
		if err := db.buildIndex(ctx, d.name, d.def, opts); err != nil {
			return built, err
		}
		built = append(built, IndexBuild{d.name, time.Since(t0)})
	}
	return built, nil
}

func (db *DB) buildIndex(ctx context.Context, name, def string, opts BuildOptions) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("build index %s: %w", name, interpret(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if opts.Workers > 0 {
		if _, err := tx.Exec(ctx, "SELECT set_config('max_parallel_maintenance_workers', $1, true)", fmt.Sprint(opts.Workers)); err != nil {
			return fmt.Errorf("build index %s: workers: %w", name, interpret(err))
		}
	}
	if opts.MaintenanceWorkMem != "" {
		if _, err := tx.Exec(ctx, "SELECT set_config('maintenance_work_mem', $1, true)", opts.MaintenanceWorkMem); err != nil {
			return fmt.Errorf("build index %s: maintenance_work_mem: %w", name, interpret(err))
		}
	}
	if _, err := tx.Exec(ctx, def); err != nil {
		return fmt.Errorf("build index %s: %w", name, interpret(err))
	}
	if _, err := tx.Exec(ctx, "DELETE FROM deferred_indexes WHERE name = $1", name); err != nil {
		return fmt.Errorf("build index %s: %w", name, interpret(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("build index %s: %w", name, interpret(err))
	}
	return nil
}

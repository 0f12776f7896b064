package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
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

// HNSWParams are the build parameters of the HNSW index chunks_hnsw:
// pgvector's m (graph neighbours a node keeps; layer 0 keeps 2m) and
// ef_construction (candidates a build or insert weighs for them). Larger
// ones give a denser graph, so more recall at a given hnsw.ef_search, for
// a longer build, slower inserts and a larger index. Migration 0002
// creates the index with pgvector's defaults, m 16 and ef_construction 64;
// the parameters an index was built with are part of its definition, so
// DeferIndexes and BuildIndexes keep them.
type HNSWParams struct {
	M              int
	EfConstruction int
}

// DefaultHNSW is migration 0002's chunks_hnsw: pgvector's defaults.
var DefaultHNSW = HNSWParams{M: 16, EfConstruction: 64}

// Validate checks p against pgvector's bounds (m 2 to 100, ef_construction
// 4 to 1000 and at least 2m).
func (p HNSWParams) Validate() error {
	switch {
	case p.M < 2 || p.M > 100:
		return fmt.Errorf("hnsw m %d: want 2 to 100", p.M)
	case p.EfConstruction < 4 || p.EfConstruction > 1000:
		return fmt.Errorf("hnsw ef_construction %d: want 4 to 1000", p.EfConstruction)
	case p.EfConstruction < 2*p.M:
		return fmt.Errorf("hnsw ef_construction %d: want at least twice m (%d)", p.EfConstruction, 2*p.M)
	}
	return nil
}

func (p HNSWParams) String() string {
	return fmt.Sprintf("m %d, ef_construction %d", p.M, p.EfConstruction)
}

// withClause is the index definition's storage parameters for p, in
// pg_get_indexdef's form.
func (p HNSWParams) withClause() string {
	return fmt.Sprintf("WITH (m='%d', ef_construction='%d')", p.M, p.EfConstruction)
}

// indexWith matches an index definition's storage parameters.
var indexWith = regexp.MustCompile(`WITH \([^)]*\)`)

// hnswDefinition is def (chunks_hnsw's CREATE INDEX, from pg_get_indexdef)
// with p's storage parameters.
func hnswDefinition(def string, p HNSWParams) string {
	if indexWith.MatchString(def) {
		return indexWith.ReplaceAllLiteralString(def, p.withClause())
	}
	// pgvector's defaults, written out: the parameters go before any WHERE.
	if i := strings.Index(def, " WHERE "); i >= 0 {
		return def[:i] + " " + p.withClause() + def[i:]
	}
	return def + " " + p.withClause()
}

// hnswParamsOf reads the parameters from chunks_hnsw's definition;
// parameters it leaves out are pgvector's defaults.
func hnswParamsOf(def string) HNSWParams {
	p := DefaultHNSW
	if m := indexWith.FindString(def); m != "" {
		for _, kv := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(m, "WITH ("), ")"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), "'"))
			if err != nil {
				continue
			}
			switch strings.TrimSpace(k) {
			case "m":
				p.M = n
			case "ef_construction":
				p.EfConstruction = n
			}
		}
	}
	return p
}

// HNSW returns the parameters chunks_hnsw was built with, or is recorded to
// be built with while it is deferred.
func (db *DB) HNSW(ctx context.Context) (HNSWParams, error) {
	var def *string
	err := db.pool.QueryRow(ctx, `SELECT coalesce(pg_get_indexdef(to_regclass('chunks_hnsw')),
		(SELECT definition FROM deferred_indexes WHERE name = 'chunks_hnsw'))`).Scan(&def)
	if err != nil {
		return HNSWParams{}, fmt.Errorf("hnsw parameters: %w", interpret(err))
	}
	if def == nil {
		return HNSWParams{}, errors.New("hnsw parameters: chunks_hnsw is neither built nor deferred")
	}
	return hnswParamsOf(*def), nil
}

// hnswRebuild is the name chunks_hnsw's replacement is built under.
const hnswRebuild = "chunks_hnsw_rebuild"

// SetHNSW makes chunks_hnsw use p. Deferred, its recorded definition is
// changed, and BuildIndexes builds it so. Built with other parameters, a
// new index is built beside it with CREATE INDEX CONCURRENTLY (writes and
// searches go on, through the old index) under opts' settings, and then
// takes its place in one transaction; a replacement a failed build left
// behind is dropped (and one an interrupted process left, first). A
// concurrent build waits for the transactions older than it, in the whole
// database, before it starts and ends. It reports the index it built (none when
// nothing needed building).
func (db *DB) SetHNSW(ctx context.Context, p HNSWParams, opts BuildOptions) ([]IndexBuild, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var deferred, built *string
	if err := db.pool.QueryRow(ctx, `SELECT (SELECT definition FROM deferred_indexes WHERE name = 'chunks_hnsw'),
		pg_get_indexdef(to_regclass('chunks_hnsw'))`).Scan(&deferred, &built); err != nil {
		return nil, fmt.Errorf("set hnsw parameters: %w", interpret(err))
	}
	switch {
	case deferred != nil:
		if _, err := db.pool.Exec(ctx, "UPDATE deferred_indexes SET definition = $1 WHERE name = 'chunks_hnsw'",
			hnswDefinition(*deferred, p)); err != nil {
			return nil, fmt.Errorf("set hnsw parameters: %w", interpret(err))
		}
		return nil, nil
	case built == nil:
		return nil, errors.New("set hnsw parameters: chunks_hnsw is neither built nor deferred")
	case hnswParamsOf(*built) == p:
		return nil, nil
	}
	def := hnswDefinition(*built, p)
	const head = "CREATE INDEX chunks_hnsw ON "
	if !strings.HasPrefix(def, head) {
		return nil, fmt.Errorf("set hnsw parameters: unexpected definition %q", def)
	}
	def = "CREATE INDEX CONCURRENTLY " + hnswRebuild + " ON " + def[len(head):]
	t0 := time.Now()
	if err := db.rebuildHNSW(ctx, def, opts); err != nil {
		return nil, err
	}
	return []IndexBuild{{"chunks_hnsw", time.Since(t0)}}, nil
}

// rebuildHNSW builds def (chunks_hnsw's replacement, CONCURRENTLY, so not
// in a transaction: opts' settings are set on the session and reset after)
// and swaps it in.
func (db *DB) rebuildHNSW(ctx context.Context, def string, opts BuildOptions) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	defer conn.Release()
	// The settings are the session's: reset before the connection goes
	// back to the pool, whatever happened.
	defer conn.Exec(context.WithoutCancel(ctx), "RESET max_parallel_maintenance_workers; RESET maintenance_work_mem") //nolint:errcheck // best effort; a failed reset leaves a build setting on one pooled connection
	if opts.Workers > 0 {
		if _, err := conn.Exec(ctx, "SELECT set_config('max_parallel_maintenance_workers', $1, false)", fmt.Sprint(opts.Workers)); err != nil {
			return fmt.Errorf("rebuild chunks_hnsw: workers: %w", interpret(err))
		}
	}
	if opts.MaintenanceWorkMem != "" {
		if _, err := conn.Exec(ctx, "SELECT set_config('maintenance_work_mem', $1, false)", opts.MaintenanceWorkMem); err != nil {
			return fmt.Errorf("rebuild chunks_hnsw: maintenance_work_mem: %w", interpret(err))
		}
	}
	// An interrupted rebuild leaves an invalid index behind.
	if _, err := conn.Exec(ctx, "DROP INDEX IF EXISTS "+hnswRebuild); err != nil {
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	if _, err := conn.Exec(ctx, def); err != nil {
		// A failed or cancelled CREATE INDEX CONCURRENTLY leaves the
		// replacement behind, invalid but maintained by every write.
		conn.Exec(context.WithoutCancel(ctx), "DROP INDEX IF EXISTS "+hnswRebuild) //nolint:errcheck // the next rebuild drops it too
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if _, err := tx.Exec(ctx, "DROP INDEX chunks_hnsw"); err != nil {
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	if _, err := tx.Exec(ctx, "ALTER INDEX "+hnswRebuild+" RENAME TO chunks_hnsw"); err != nil {
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("rebuild chunks_hnsw: %w", interpret(err))
	}
	return nil
}

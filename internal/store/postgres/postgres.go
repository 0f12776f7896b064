package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"capsuled/internal/domain"
	"capsuled/internal/jobs"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the key of the session advisory lock held while
// migrations run (any value; the same in every replica).
const migrationLock int64 = 0x63617073756c6564 // "capsuled"

// FullText names how keyword search ranks chunks.
type FullText string

// The keyword search methods.
const (
	FullTextAuto     FullText = ""         // BM25 when the pg_textsearch index exists, else tsvector
	FullTextBM25     FullText = "bm25"     // pg_textsearch's BM25 index (Open fails without it)
	FullTextTSVector FullText = "tsvector" // PostgreSQL's full-text search, ts_rank_cd
)

// Options tunes Open. Zero values take the defaults.
type Options struct {
	// MaxConns is the pool size. Default: pool_max_conns from the URL,
	// else pgxpool's default (the larger of 4 and the number of CPUs).
	// With pg_textsearch a second pool of the same size runs the BM25
	// index scans (DB.scanPool), so a replica may hold up to twice it.
	MaxConns int32
	// FullText picks the keyword search method. Default FullTextAuto.
	FullText FullText
	// ClaimLease is how long an ingestion job may run before it is presumed
	// dead (its replica stopped) and run again by any replica (river's
	// RescueStuckJobsAfter); it must exceed the ingestion of one item (a live
	// job run twice only costs duplicate work). Default DefaultClaimLease;
	// negative: one process owns the database, and the jobs a stopped
	// process left running are run again when ingestion starts.
	ClaimLease time.Duration
	// RetryFor is how long a statement that could not reach the database
	// is retried (a restart or failover; see pool). Default
	// DefaultRetryFor; negative: no retries.
	RetryFor time.Duration
}

// DefaultClaimLease is the default Options.ClaimLease.
const DefaultClaimLease = 5 * time.Minute

// DB is an open capsuled database on PostgreSQL.
type DB struct {
	pool     *pool
	fullText FullText // resolved: bm25 or tsvector
	// scanPool runs the BM25 index scans (indexScored) on connections that
	// parse every statement right before it is planned
	// (pgx.QueryExecModeExec): nil unless fullText is bm25.
	scanPool *pool
	now      func() time.Time
	// claimLease is how long an ingestion job may run before another
	// replica runs it again (river's RescueStuckJobsAfter).
	claimLease time.Duration
	jobs       *jobs.Queue[pgx.Tx]
}

// Open connects to the PostgreSQL database at url (postgres://…), applies
// any pending migrations under an advisory lock, and returns a pool.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", errors.New(redact(err.Error())))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if err := migrate(ctx, cfg); err != nil {
		return nil, err
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		return pgxvec.RegisterTypes(ctx, conn)
	}
	pp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: pool: %w", err)
	}
	retryFor := opts.RetryFor
	if retryFor == 0 {
		retryFor = DefaultRetryFor
	}
	db := &DB{pool: &pool{Pool: pp, retryFor: max(retryFor, 0)}, now: time.Now, claimLease: opts.ClaimLease}
	if db.claimLease == 0 {
		db.claimLease = DefaultClaimLease
	}
	if db.jobs, err = jobs.NewPostgres(pp); err != nil {
		pp.Close()
		return nil, err
	}
	if db.fullText, err = db.resolveFullText(ctx, opts.FullText); err != nil {
		pp.Close()
		return nil, err
	}
	if db.fullText == FullTextBM25 {
		scfg := cfg.Copy()
		scfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		scfg.MinConns = 0
		sp, err := pgxpool.NewWithConfig(ctx, scfg)
		if err != nil {
			pp.Close()
			return nil, fmt.Errorf("postgres: pool: %w", err)
		}
		db.scanPool = &pool{Pool: sp, retryFor: db.pool.retryFor}
	}
	return db, nil
}

// redact hides a password that a parse error may quote.
func redact(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.Index(s[i+3:], "@"); j >= 0 {
			return s[:i+3] + "…" + s[i+3+j:]
		}
	}
	return s
}

func (db *DB) resolveFullText(ctx context.Context, want FullText) (FullText, error) {
	var bm25 bool
	// A BM25 index that a bulk load deferred counts: it is built again
	// after the load (DeferIndexes).
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('chunks_bm25') IS NOT NULL
		OR EXISTS (SELECT FROM deferred_indexes WHERE name = 'chunks_bm25')`).Scan(&bm25); err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	switch want {
	case FullTextAuto:
		if bm25 {
			return FullTextBM25, nil
		}
		return FullTextTSVector, nil
	case FullTextBM25:
		if !bm25 {
			return "", errors.New("postgres: full-text bm25 needs the pg_textsearch extension (in shared_preload_libraries) when the schema was migrated")
		}
		return want, nil
	case FullTextTSVector:
		return want, nil
	}
	return "", fmt.Errorf("postgres: unknown full-text method %q (bm25 or tsvector)", want)
}

// Close closes the pools.
func (db *DB) Close() error {
	db.pool.Close()
	if db.scanPool != nil {
		db.scanPool.Close()
	}
	return nil
}

// Ping checks that the database answers (readiness).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// Pool is the connection pool, for packages of this backend.
func (db *DB) Pool() *pgxpool.Pool { return db.pool.Pool }

// FullText says which keyword search method the store uses.
func (db *DB) FullText() FullText { return db.fullText }

// migrate applies river's pending migrations (its job tables), then the
// embedded migrations that are not yet recorded, while one connection holds
// the advisory lock throughout.
func migrate(ctx context.Context, cfg *pgxpool.Config) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck // closing the session releases it too
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: create schema_migrations: %w", err)
	}
	if err := migrateJobs(ctx, cfg); err != nil {
		return err
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := path.Base(name)
		var version int
		if _, err := fmt.Sscanf(base, "%04d_", &version); err != nil {
			return fmt.Errorf("postgres: migration %s: name must start with a 4-digit version", base)
		}
		if err := apply(ctx, conn, version, base, name); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, conn *pgx.Conn, version int, base, name string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migration %s: %w", base, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	var done bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT FROM schema_migrations WHERE version = $1)", version).Scan(&done); err != nil {
		return fmt.Errorf("postgres: migration %s: %w", base, err)
	}
	if done {
		return nil
	}
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	// Simple protocol: a migration is several statements.
	if _, err := tx.Exec(ctx, string(body), pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("postgres: migration %s: %w", base, err)
	}
	if after := afterMigration[version]; after != nil {
		if err := after(ctx, tx); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", base, err)
		}
	}
	if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
		version, strings.TrimSuffix(base, ".sql")); err != nil {
		return fmt.Errorf("postgres: migration %s: %w", base, err)
	}
	return tx.Commit(ctx)
}

// interpret maps driver errors to the domain's sentinels.
func interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ErrNotFound
	}
	if u := unavailable(err); u != err {
		return u
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %v", domain.ErrConflict, err)
		case "23503": // foreign_key_violation: the row it refers to is gone
			return fmt.Errorf("%w: %v", domain.ErrNotFound, err)
		case "53100": // disk_full
			return &domain.Error{Kind: domain.KindUnavailable, Code: "storage_full", Message: "the database server's disk is full", Err: err}
		case "25006": // read_only_sql_transaction
			return &domain.Error{Kind: domain.KindUnavailable, Code: "storage_read_only", Message: "the database is read-only", Err: err}
		}
	}
	return err
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// utc returns t in UTC (pgx reads timestamptz in the local zone).
func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"capsuled/internal/domain"
	"capsuled/internal/jobs"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is an open capsuled database.
type DB struct {
	path  string
	write *sql.DB // one connection: the only writer in this process
	read  *sql.DB
	now   func() time.Time
	jobs  *jobs.Queue[*sql.Tx] // river's jobs, on the writer pool
	kw    *kwIndexes           // large capsules' in-process keyword indexes
}

// Open opens (creating if needed) the database file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string) (*DB, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	// SQLite in WAL mode needs to create files beside the database; on a
	// read-only directory it fails with "unable to open database file (14)",
	// so say what is wrong first.
	if err := checkWritable(dir); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	// The writer's page cache is 64 MiB rather than SQLite's 2 MiB: bulk
	// ingestion into a large capsule inserts into B-trees (the embedding
	// cache's random hash keys, FTS5's segments, the items' indexes) far
	// bigger than 2 MiB, and every page that falls out of the cache costs
	// a read from the OS. Readers keep the default (eight of them).
	write, err := sql.Open("sqlite", dsn+"&_pragma=cache_size(-65536)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	read, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	read.SetMaxOpenConns(8)
	db := &DB{path: path, write: write, read: read, now: time.Now}
	if db.jobs, err = jobs.NewSQLite(write); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if db.kw, err = newKWIndexes(path, db.read, DefaultKeywordIndexMin); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// checkWritable reports a clear error when dir cannot be written.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("the data directory %s is read-only: capsuled needs to write its database there: %w", dir, err)
		}
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("the data directory %s is full: %w", dir, err)
		}
		return fmt.Errorf("the data directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Close closes the database.
func (db *DB) Close() error {
	var kw error
	if db.kw != nil {
		kw = db.kw.close()
	}
	return errors.Join(kw, db.read.Close(), db.write.Close())
}

// Ping checks that the database answers (readiness).
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.read.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// Write is the single writer connection pool, for packages of this backend.
func (db *DB) Write() *sql.DB { return db.write }

// Read is the reader connection pool.
func (db *DB) Read() *sql.DB { return db.read }

// migrate applies river's pending migrations (its job tables), then the
// embedded migrations that are not yet recorded.
func (db *DB) migrate(ctx context.Context) error {
	if err := db.migrateJobs(ctx); err != nil {
		return err
	}
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := filepath.Base(name)
		var version int
		if _, err := fmt.Sscanf(base, "%04d_", &version); err != nil {
			return fmt.Errorf("migration %s: name must start with a 4-digit version", base)
		}
		if err := db.apply(ctx, version, base, name); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) apply(ctx context.Context, version int, base, name string) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", base, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", version).Scan(&n); err != nil {
		return fmt.Errorf("migration %s: %w", base, err)
	}
	if n > 0 {
		return nil
	}
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return fmt.Errorf("migration %s: %w", base, err)
	}
	if after := afterMigration[version]; after != nil {
		if err := after(ctx, db, tx); err != nil {
			return fmt.Errorf("migration %s: %w", base, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		version, strings.TrimSuffix(base, ".sql"), db.now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %s: %w", base, err)
	}
	return tx.Commit()
}

// interpret maps driver errors to the domain's sentinels.
func interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", domain.ErrConflict, err)
		case sqlite3.SQLITE_FULL:
			return &domain.Error{Kind: domain.KindUnavailable, Code: "storage_full", Message: "the data directory is full", Err: err}
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_READONLY_DBMOVED, sqlite3.SQLITE_READONLY_DIRECTORY:
			return &domain.Error{Kind: domain.KindUnavailable, Code: "storage_read_only", Message: "the data directory is read-only", Err: err}
		}
	}
	return err
}

// millis and fromMillis convert times to the stored Unix milliseconds.
func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func nullMillis(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromNullMillis(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMillis(v.Int64)
	return &t
}

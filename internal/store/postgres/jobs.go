package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"capsuled/internal/domain"
	"capsuled/internal/jobs"
)

// migrateJobs applies river's pending migrations through a one-connection
// pool of its own (river migrates through a pool), while the caller's
// connection holds the migration lock.
func migrateJobs(ctx context.Context, cfg *pgxpool.Config) error {
	cfg = cfg.Copy()
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: job migrations: %w", err)
	}
	defer pool.Close()
	if err := jobs.MigratePostgres(ctx, pool); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// afterMigration holds Go steps that run in the transaction of a migration,
// after its SQL.
var afterMigration = map[int]func(ctx context.Context, tx pgx.Tx) error{
	5: enqueueQueued,
}

// enqueueQueued gives every queued item an ingestion job: migration 5 moves
// the queue from the items table (claims) to river's jobs, and the items
// the old queue held still need theirs.
func enqueueQueued(ctx context.Context, tx pgx.Tx) error {
	q, err := jobs.NewPostgres(nil) // enqueues in tx only
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, "SELECT id, content_hash FROM items WHERE status = $1 ORDER BY id", string(domain.StatusQueued))
	if err != nil {
		return err
	}
	type pending struct{ id, hash string }
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pending, error) {
		var p pending
		return p, r.Scan(&p.id, &p.hash)
	})
	if err != nil {
		return err
	}
	for _, p := range todo {
		if err := q.EnqueueTx(ctx, tx, p.id, p.hash); err != nil {
			return err
		}
	}
	return nil
}

// StartIngest works the database's ingestion jobs with step, at most
// workers at once in this process, until StopIngest. A job that has run
// longer than the claim lease is run again by any replica; with no lease
// (negative) the database belongs to this process, and the jobs a stopped
// process left running are run again at once.
func (s *CapsuleStore) StartIngest(ctx context.Context, workers int, step func(ctx context.Context, itemID, contentHash string) error, embed func(ctx context.Context) (bool, error)) error {
	return s.db.jobs.Start(ctx, jobs.Run{Workers: workers, RescueAfter: max(s.lease, 0), SingleOwner: s.lease < 0, Embed: embed}, step)
}

// EnqueueEmbed inserts the job that embeds the chunks without a vector,
// unless one already waits or runs.
func (s *CapsuleStore) EnqueueEmbed(ctx context.Context) error { return s.db.jobs.EnqueueEmbed(ctx) }

// StopIngest stops working jobs; the running ones get until ctx ends to
// finish, then are cancelled and run again later.
func (s *CapsuleStore) StopIngest(ctx context.Context) error { return s.db.jobs.Stop(ctx) }

// StartItem moves an item to indexing for the job that ingests the content
// hash, and returns it: the item must be queued, or indexing (a job whose
// replica stopped, run again). ErrNotFound when the item is gone and
// ErrConflict when it no longer needs this job (new content, or done).
func (s *CapsuleStore) StartItem(ctx context.Context, id, hash string, at time.Time) (domain.Item, error) {
	var got string
	err := s.db.pool.QueryRow(ctx, `UPDATE items SET status = $1, time_updated = $2
		WHERE id = $3 AND content_hash = $4 AND status IN ($1, $5) RETURNING id`,
		string(domain.StatusIndexing), at, id, hash, string(domain.StatusQueued)).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := s.db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM items WHERE id = $1)", id).Scan(&exists); err != nil {
			return domain.Item{}, interpret(err)
		}
		if !exists {
			return domain.Item{}, domain.ErrNotFound
		}
		return domain.Item{}, fmt.Errorf("start item %s: another hash or done: %w", id, domain.ErrConflict)
	}
	if err != nil {
		return domain.Item{}, interpret(err)
	}
	return scanItem(s.db.pool.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = $1", id))
}

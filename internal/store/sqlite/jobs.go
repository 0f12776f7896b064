package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/jobs"
)

// migrateJobs applies river's pending migrations through the writer pool.
func (db *DB) migrateJobs(ctx context.Context) error {
	if err := jobs.MigrateSQLite(ctx, db.write); err != nil {
		return fmt.Errorf("job migrations: %w", err)
	}
	return nil
}

// afterMigration holds Go steps that run in the transaction of a migration,
// after its SQL.
var afterMigration = map[int]func(ctx context.Context, db *DB, tx *sql.Tx) error{
	5: enqueueQueued,
}

// enqueueQueued gives every queued item an ingestion job: migration 5 moves
// the queue from the items table (claims) to river's jobs, and the items
// the old queue held still need theirs.
func enqueueQueued(ctx context.Context, db *DB, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, content_hash FROM items WHERE status = ? ORDER BY id", string(domain.StatusQueued))
	if err != nil {
		return err
	}
	type pending struct{ id, hash string }
	var todo []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.id, &p.hash); err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range todo {
		if err := db.jobs.EnqueueTx(ctx, tx, p.id, p.hash); err != nil {
			return err
		}
	}
	return nil
}

// StartIngest works the database's ingestion jobs with step, at most
// workers at once, until StopIngest. Without a lease (WithLease) the
// database belongs to this process: jobs a stopped process left running are
// run again at once.
func (s *CapsuleStore) StartIngest(ctx context.Context, workers int, step func(ctx context.Context, itemID, contentHash string) error, embed func(ctx context.Context) (bool, error)) error {
	return s.db.jobs.Start(ctx, jobs.Run{Workers: workers, RescueAfter: s.lease, SingleOwner: s.lease <= 0, Embed: embed}, step)
}

// EnqueueEmbed inserts the job that embeds the chunks without a vector,
// unless one already waits or runs.
func (s *CapsuleStore) EnqueueEmbed(ctx context.Context) error { return s.db.jobs.EnqueueEmbed(ctx) }

// StopIngest stops working jobs; the running ones get until ctx ends to
// finish, then are cancelled and run again later.
func (s *CapsuleStore) StopIngest(ctx context.Context) error { return s.db.jobs.Stop(ctx) }

// StartItem moves an item to indexing for the job that ingests the content
// hash, and returns it: the item must be queued, or indexing (a job whose
// process stopped, run again). ErrNotFound when the item is gone and
// ErrConflict when it no longer needs this job (new content, or done).
func (s *CapsuleStore) StartItem(ctx context.Context, id, hash string, at time.Time) (domain.Item, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback()
	var status, cur string
	if err := tx.QueryRowContext(ctx, "SELECT status, content_hash FROM items WHERE id = ?", id).Scan(&status, &cur); err != nil {
		return domain.Item{}, interpret(err)
	}
	if cur != hash || (status != string(domain.StatusQueued) && status != string(domain.StatusIndexing)) {
		return domain.Item{}, fmt.Errorf("start item %s: %s with another hash or done: %w", id, status, domain.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET status = ?, time_updated = ? WHERE id = ?",
		string(domain.StatusIndexing), millis(at), id); err != nil {
		return domain.Item{}, interpret(err)
	}
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = ?", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit()
}

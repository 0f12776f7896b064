package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// QueueName is the river queue of ingestion jobs.
const QueueName = "ingest"

// KindIngestItem is the kind of the ingestion job.
const KindIngestItem = "ingest_item"

// DefaultRescueAfter is how long a job may run before it is presumed dead
// (its process stopped) and run again, when Run leaves it unset.
const DefaultRescueAfter = 5 * time.Minute

// DefaultWorkers is the number of jobs one process works at once when Run
// leaves it unset.
const DefaultWorkers = 16

// maxAttempts bounds how often a job whose step fails (the database was
// unavailable, say) is retried with river's backoff before it is discarded.
const maxAttempts = 10

// IngestItem is the job that ingests one item's content: the item with the
// id, as long as it still holds the content hash.
type IngestItem struct {
	ItemID      string `json:"item_id"`
	ContentHash string `json:"content_hash"`
}

// Kind is the job's kind in river.
func (IngestItem) Kind() string { return KindIngestItem }

// InsertOpts puts the job in the ingest queue.
func (IngestItem) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: maxAttempts}
}

// KindEmbedVectors is the kind of the job that gives vectors to the chunks
// that have none.
const KindEmbedVectors = "embed_vectors"

// EmbedVectors is the job that embeds every searchable chunk without a
// vector (items ingested while no embedding model was configured, or whose
// vectors a change of model removed). There is at most one waiting or
// running at a time; it works until none is left.
type EmbedVectors struct{}

// Kind is the job's kind in river.
func (EmbedVectors) Kind() string { return KindEmbedVectors }

// InsertOpts puts the job in the ingest queue, once: inserting it while
// one waits or runs inserts nothing.
func (EmbedVectors) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled},
	}}
}

// EmbedStep is the capsule service's work of an embed_vectors job, a
// bounded part of it at a time (a job must end well within the lease):
// more says that chunks remain, and the job runs again at once; an error
// has it retried with backoff; otherwise it is finished.
type EmbedStep func(ctx context.Context) (more bool, err error)

// Step ingests one item: the capsule service's per-item step. A nil error
// finishes the job (also when the item changed or went away meanwhile); an
// error is retried with backoff.
type Step func(ctx context.Context, itemID, contentHash string) error

// Run configures the working of jobs.
type Run struct {
	// Workers is the most jobs this process works at once (river's
	// MaxWorkers for the ingest queue). Default DefaultWorkers.
	Workers int
	// RescueAfter is how long a job may run before it is presumed dead and
	// run again, by any process (river's RescueStuckJobsAfter; river's
	// JobTimeout too, as its rescuer leaves alone the jobs that have not
	// timed out: a live job that runs longer is cancelled and retried).
	// It must exceed the ingestion of one item. Default DefaultRescueAfter,
	// or an hour with SingleOwner.
	RescueAfter time.Duration
	// SingleOwner says that this process alone works the database's jobs
	// (SQLite, or a PostgreSQL store owned by one process): jobs left running
	// by a process that stopped are rescued at Start, not after RescueAfter.
	SingleOwner bool
	// Log receives river's warnings and errors. Default slog.Default().
	Log *slog.Logger
	// Embed works embed_vectors jobs. Nil (a process without an embedding
	// model): such a job is put back for a minute, for a process that has
	// one.
	Embed EmbedStep

	// reindexSchedule is when river's index maintenance runs (nil: river's
	// default, daily at midnight UTC); tests make it run at once.
	reindexSchedule river.PeriodicSchedule
}

// Queue is the job queue on one database; TTx is the driver's transaction
// type (pgx.Tx or *sql.Tx).
type Queue[TTx any] struct {
	driver   riverdriver.Driver[TTx]
	inserter *river.Client[TTx] // insert-only

	mu     sync.Mutex
	worker *river.Client[TTx] // while started
}

// NewSQLite returns the queue on a SQLite database. Pass the process's
// single writer pool: river's writes then queue behind the store's like any
// other, instead of failing with SQLITE_BUSY.
func NewSQLite(db *sql.DB) (*Queue[*sql.Tx], error) {
	return newQueue(riversqlite.New(db))
}

// NewPostgres returns the queue on a PostgreSQL pool; with a nil pool the
// queue only enqueues, in the caller's transactions (migrations).
func NewPostgres(pool *pgxpool.Pool) (*Queue[pgx.Tx], error) {
	return newQueue(riverpgxv5.New(pool))
}

func newQueue[TTx any](d riverdriver.Driver[TTx]) (*Queue[TTx], error) {
	c, err := river.NewClient(d, &river.Config{Workers: workers(nil, nil), Logger: quiet(nil)})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return &Queue[TTx]{driver: d, inserter: c}, nil
}

// MigrateSQLite applies river's pending migrations for SQLite through db,
// each in a transaction of its own (river's recommended way: some
// migrations cannot share one transaction).
func MigrateSQLite(ctx context.Context, db *sql.DB) error {
	return migrate(ctx, riversqlite.New(db))
}

// MigratePostgres applies river's pending migrations for PostgreSQL through
// pool, each in a transaction of its own; run it under the lock that
// serializes the store's migrations, so that replicas starting together
// apply each one once.
func MigratePostgres(ctx context.Context, pool *pgxpool.Pool) error {
	return migrate(ctx, riverpgxv5.New(pool))
}

func migrate[TTx any](ctx context.Context, d riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(d, &rivermigrate.Config{Logger: quiet(nil)})
	if err != nil {
		return fmt.Errorf("jobs: migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrations: %w", err)
	}
	return nil
}

// EnqueueTx inserts an ingestion job for the item in tx, so that the job
// exists exactly when the item write that queued it commits.
func (q *Queue[TTx]) EnqueueTx(ctx context.Context, tx TTx, itemID, contentHash string) error {
	if _, err := q.inserter.InsertTx(ctx, tx, IngestItem{ItemID: itemID, ContentHash: contentHash}, nil); err != nil {
		return fmt.Errorf("enqueue ingestion of %s: %w", itemID, err)
	}
	return nil
}

// EnqueueEmbed inserts the embed_vectors job, unless one already waits or
// runs.
func (q *Queue[TTx]) EnqueueEmbed(ctx context.Context) error {
	if _, err := q.inserter.Insert(ctx, EmbedVectors{}, nil); err != nil {
		return fmt.Errorf("enqueue embedding of chunks without vectors: %w", err)
	}
	return nil
}

// Start works the queue's jobs with step until Stop or ctx ends.
func (q *Queue[TTx]) Start(ctx context.Context, run Run, step Step) error {
	if step == nil {
		return errors.New("jobs: a step is required")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.worker != nil {
		return errors.New("jobs: already started")
	}
	if run.Workers <= 0 {
		run.Workers = DefaultWorkers
	}
	if run.RescueAfter <= 0 {
		run.RescueAfter = DefaultRescueAfter
		if run.SingleOwner {
			run.RescueAfter = time.Hour // crashes are rescued at Start
		}
	}
	if run.SingleOwner {
		if err := q.rescueAll(ctx); err != nil {
			return err
		}
	}
	var reindex []string // nil: river's default set, on PostgreSQL
	if q.driver.DatabaseName() == riverdriver.DatabaseNameSQLite {
		// River's reindexer rebuilds PostgreSQL indexes that bloat
		// (REINDEX CONCURRENTLY); several of its default names exist only
		// there, and it warned at every start on SQLite that they do not
		// exist. SQLite gets none.
		reindex = []string{}
	}
	c, err := river.NewClient(q.driver, &river.Config{
		ReindexerIndexNames:  reindex,
		ReindexerSchedule:    run.reindexSchedule,
		Queues:               map[string]river.QueueConfig{QueueName: {MaxWorkers: run.Workers}},
		Workers:              workers(step, run.Embed),
		RescueStuckJobsAfter: run.RescueAfter,
		// River rescues a job only once its time-out has passed too: a
		// job is cancelled (and retried) when it outlives the lease.
		JobTimeout:        run.RescueAfter,
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 250 * time.Millisecond,
		Logger:            quiet(run.Log),
	})
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	if err := c.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	q.worker = c
	return nil
}

// Stop stops working jobs: it waits for the running ones until ctx ends,
// then cancels them (they are retried, by this process or another).
func (q *Queue[TTx]) Stop(ctx context.Context) error {
	q.mu.Lock()
	c := q.worker
	q.worker = nil
	q.mu.Unlock()
	if c == nil {
		return nil
	}
	err := c.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = c.StopAndCancel(hard)
	}
	if err != nil {
		return fmt.Errorf("jobs: stop: %w", err)
	}
	return nil
}

// rescueAll makes every job left running available again at once: on a
// database that one process owns, a running job at start belongs to a
// process that stopped. It uses the same driver operations as river's own
// rescuer, which would do the same only after RescueAfter.
func (q *Queue[TTx]) rescueAll(ctx context.Context) error {
	exec := q.driver.GetExecutor()
	now := time.Now().UTC()
	for {
		stuck, err := exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 500, StuckHorizon: now.Add(time.Second)})
		if err != nil {
			return fmt.Errorf("jobs: rescue: %w", err)
		}
		if len(stuck) == 0 {
			return nil
		}
		p := &riverdriver.JobRescueManyParams{StuckHorizon: now.Add(time.Second)}
		for _, j := range stuck {
			msg, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(j.Attempt, 0),
				Error: "rescued at start: the process that ran it stopped"})
			if err != nil {
				return err
			}
			p.ID = append(p.ID, j.ID)
			p.Error = append(p.Error, msg)
			p.FinalizedAt = append(p.FinalizedAt, nil)
			p.ScheduledAt = append(p.ScheduledAt, now)
			p.State = append(p.State, string(rivertype.JobStateAvailable))
		}
		if _, err := exec.JobRescueMany(ctx, p); err != nil {
			return fmt.Errorf("jobs: rescue: %w", err)
		}
	}
}

// ingestWorker works ingest_item jobs with a step.
type ingestWorker struct {
	river.WorkerDefaults[IngestItem]
	step Step
}

func (w *ingestWorker) Work(ctx context.Context, job *river.Job[IngestItem]) error {
	if w.step == nil {
		return errors.New("this client only inserts jobs")
	}
	return w.step(ctx, job.Args.ItemID, job.Args.ContentHash)
}

// embedWorker works embed_vectors jobs with a step.
type embedWorker struct {
	river.WorkerDefaults[EmbedVectors]
	step EmbedStep
}

func (w *embedWorker) Work(ctx context.Context, job *river.Job[EmbedVectors]) error {
	if w.step == nil {
		return river.JobSnooze(time.Minute)
	}
	more, err := w.step(ctx)
	if err == nil && more {
		return river.JobSnooze(0)
	}
	return err
}

func workers(step Step, embed EmbedStep) *river.Workers {
	ws := river.NewWorkers()
	river.AddWorker(ws, &ingestWorker{step: step})
	river.AddWorker(ws, &embedWorker{step: embed})
	return ws
}

// quiet is river's logger: the process's, from warnings up (river logs
// every fetch and start at info and debug).
func quiet(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return slog.New(levelAtLeast{l.Handler(), slog.LevelWarn})
}

type levelAtLeast struct {
	slog.Handler
	min slog.Level
}

func (h levelAtLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelAtLeast) WithAttrs(a []slog.Attr) slog.Handler {
	return levelAtLeast{h.Handler.WithAttrs(a), h.min}
}

func (h levelAtLeast) WithGroup(name string) slog.Handler {
	return levelAtLeast{h.Handler.WithGroup(name), h.min}
}

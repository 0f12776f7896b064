package jobs_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"capsuled/internal/jobs"
)

// openSQLite returns a migrated SQLite database with one writer
// connection, as the store opens it, and its queue.
func openSQLite(t *testing.T) (*sql.DB, *jobs.Queue[*sql.Tx]) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "jobs.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if err := jobs.MigrateSQLite(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := jobs.MigrateSQLite(ctx, db); err != nil { // nothing left to apply
		t.Fatal(err)
	}
	q, err := jobs.NewSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	return db, q
}

// recorder is a step that records its calls and fails the first fail
// calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
	fail  int
}

func (r *recorder) step(_ context.Context, id, hash string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, id+"/"+hash)
	if len(r.calls) <= r.fail {
		return errors.New("database unavailable")
	}
	return nil
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func TestQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		commit   []string // items enqueued in committed transactions
		rollback []string // items enqueued in rolled-back ones
		fail     int      // the step's first calls that fail
		want     []string // the step's calls, in order
	}{
		{name: "a committed job runs once with its args", commit: []string{"itm_1"}, want: []string{"itm_1/h_itm_1"}},
		{name: "a rolled-back write leaves no job", rollback: []string{"itm_2"}, commit: []string{"itm_3"}, want: []string{"itm_3/h_itm_3"}},
		{name: "a failing step is retried", commit: []string{"itm_4"}, fail: 1, want: []string{"itm_4/h_itm_4", "itm_4/h_itm_4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, q := openSQLite(t)
			enqueue := func(id string, commit bool) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := q.EnqueueTx(ctx, tx, id, "h_"+id); err != nil {
					t.Fatal(err)
				}
				if commit {
					err = tx.Commit()
				} else {
					err = tx.Rollback()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range tc.rollback {
				enqueue(id, false)
			}
			for _, id := range tc.commit {
				enqueue(id, true)
			}
			r := &recorder{fail: tc.fail}
			if err := q.Start(ctx, jobs.Run{Workers: 2, SingleOwner: true}, r.step); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { q.Stop(ctx) })
			deadline := time.Now().Add(time.Minute)
			for len(r.seen()) < len(tc.want) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond) // no more calls come
			got := r.seen()
			if len(got) != len(tc.want) {
				t.Fatalf("calls %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("calls %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestStartTwiceAndStopIdle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, q := openSQLite(t)
	if err := q.Stop(ctx); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	if err := q.Start(ctx, jobs.Run{}, nil); err == nil {
		t.Fatal("started without a step")
	}
	r := &recorder{}
	if err := q.Start(ctx, jobs.Run{SingleOwner: true}, r.step); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx, jobs.Run{SingleOwner: true}, r.step); err == nil {
		t.Fatal("started twice")
	}
	if err := q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNoReindexWarningOnSQLite: river's index maintenance, when it runs on
// SQLite, does not warn about PostgreSQL indexes that SQLite never has.
func TestNoReindexWarningOnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, q := openSQLite(t)
	var logs syncLog
	run := jobs.ReindexEvery(jobs.Run{SingleOwner: true, Log: slog.New(slog.NewTextHandler(&logs, nil))}, 50*time.Millisecond)
	if err := q.Start(ctx, run, (&recorder{}).step); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // river elects a leader, whose maintenance then runs every 50 ms
	if err := q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "reindex") {
		t.Fatalf("river's reindexer warned on SQLite:\n%s", logs.String())
	}
}

// syncLog is a log sink safe for river's goroutines.
type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestEmbedVectorsJob: the embed_vectors job is inserted once however often
// it is asked for while it waits, runs again at once while its step says
// more work remains, is retried after an error, and finishes.
func TestEmbedVectorsJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, q := openSQLite(t)
	for range 3 {
		if err := q.EnqueueEmbed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM river_job WHERE kind = ?", jobs.KindEmbedVectors).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d embed jobs waiting (%v), want 1", n, err)
	}
	var mu sync.Mutex
	calls := 0
	done := make(chan struct{})
	embed := func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch calls {
		case 1, 2:
			return true, nil // more to do: runs again at once
		case 3:
			return false, errors.New("database unavailable") // retried
		}
		close(done)
		return false, nil
	}
	if err := q.Start(ctx, jobs.Run{SingleOwner: true, Embed: embed}, (&recorder{}).step); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(ctx) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the embed step ran %d times, want 4", calls)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if calls != 4 {
		t.Fatalf("the embed step ran %d times, want 4", calls)
	}
	// Finished: asking again inserts a new one.
	if err := q.EnqueueEmbed(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEmbedVectorsJobWaitsForAModel: a process without an embed step puts
// the job back for one that has it.
func TestEmbedVectorsJobWaitsForAModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, q := openSQLite(t)
	if err := q.EnqueueEmbed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx, jobs.Run{SingleOwner: true}, (&recorder{}).step); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(ctx) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		if err := db.QueryRowContext(ctx, "SELECT state FROM river_job WHERE kind = ?", jobs.KindEmbedVectors).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == "scheduled" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is %s, want scheduled (snoozed)", state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

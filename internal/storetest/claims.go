package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
)

// Jobs runs the suite of durable ingestion jobs. newDB makes a fresh
// database and returns its opener: each call opens one more store on that
// database, as one more process would, whose jobs presumed dead after lease
// are run again by any process (negative: the store's process owns the
// database, and rescues at once, when ingestion starts, the jobs a stopped
// process left running).
func Jobs(t *testing.T, newDB func(t *testing.T) func(t *testing.T, lease time.Duration) capsule.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	put := func(t *testing.T, st capsule.Store, id, hash string) {
		t.Helper()
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: "docs", Kind: domain.ItemText, URI: id, Size: 1,
			ContentHash: hash, TimeAdded: t0, TimeUpdated: t0, Status: domain.StatusQueued}); err != nil {
			t.Fatal(err)
		}
	}
	setup := func(t *testing.T) func(t *testing.T, lease time.Duration) capsule.Store {
		open := newDB(t)
		if err := open(t, time.Minute).CreateCapsule(ctx, domain.Capsule{Name: "docs", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		return open
	}
	// runs records every run of a job; its step does what the capsule
	// service's does, with one chunk.
	type runs struct {
		mu   sync.Mutex
		seen map[string]int // item id/content hash → runs
	}
	stepOf := func(st capsule.Store, r *runs) func(ctx context.Context, id, hash string) error {
		return func(ctx context.Context, id, hash string) error {
			r.mu.Lock()
			r.seen[id+"/"+hash]++
			r.mu.Unlock()
			it, err := st.StartItem(ctx, id, hash, time.Now().UTC())
			if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrConflict) {
				return nil
			} else if err != nil {
				return err
			}
			_, err = st.CompleteItem(ctx, it.ID, hash, "text", []domain.Chunk{{Idx: 0, Text: "job " + id, End: 4, Tokens: 1}}, time.Now().UTC())
			if errors.Is(err, domain.ErrConflict) {
				return nil
			}
			return err
		}
	}
	start := func(t *testing.T, st capsule.Store, workers int, step func(ctx context.Context, id, hash string) error) {
		t.Helper()
		if err := st.StartIngest(ctx, workers, step, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stop, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			st.StopIngest(stop)
		})
	}
	waitReady := func(t *testing.T, st capsule.Store, within time.Duration, ids ...string) {
		t.Helper()
		deadline := time.Now().Add(within)
		for _, id := range ids {
			for {
				it, err := st.GetItem(ctx, "docs", id)
				if err != nil {
					t.Fatal(err)
				}
				if it.Status == domain.StatusReady {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("item %s still %s after %s", id, it.Status, within)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}

	t.Run("RacingProcessesRunEachJobOnce", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		a, b := open(t, time.Minute), open(t, time.Minute)
		const n = 24
		var ids []string
		for i := range n {
			id := fmt.Sprintf("itm_%02d", i)
			ids = append(ids, id)
			put(t, a, id, "h"+id)
		}
		r := &runs{seen: map[string]int{}}
		start(t, a, 4, stepOf(a, r))
		start(t, b, 4, stepOf(b, r))
		waitReady(t, b, time.Minute, ids...)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.seen) != n {
			t.Fatalf("%d jobs ran, want %d: %v", len(r.seen), n, r.seen)
		}
		for job, c := range r.seen {
			if c != 1 {
				t.Fatalf("job %s ran %d times", job, c)
			}
		}
	})

	t.Run("OneJobPerChange", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		st := open(t, time.Minute)
		r := &runs{seen: map[string]int{}}
		start(t, st, 2, stepOf(st, r))
		put(t, st, "itm_1", "h1")
		waitReady(t, st, time.Minute, "itm_1")
		put(t, st, "itm_1", "h1") // the same bytes again: nothing to do
		put(t, st, "itm_1", "h2") // new content: one job
		time.Sleep(300 * time.Millisecond)
		waitReady(t, st, time.Minute, "itm_1")
		if _, err := st.RequeueItem(ctx, "docs", "itm_1", time.Now().UTC()); err != nil { // reindex: one job
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		waitReady(t, st, time.Minute, "itm_1")
		r.mu.Lock()
		defer r.mu.Unlock()
		if want := map[string]int{"itm_1/h1": 1, "itm_1/h2": 2}; !maps.Equal(r.seen, want) {
			t.Fatalf("runs %v, want %v", r.seen, want)
		}
	})

	// rescued runs a job on a process whose worker hangs (as if killed:
	// its job stays running), then on a second process opened with lease,
	// which must finish it.
	rescued := func(t *testing.T, lease time.Duration, within time.Duration) {
		open := setup(t)
		a := open(t, lease)
		put(t, a, "itm_1", "h1")
		started, release := make(chan struct{}), make(chan struct{})
		start(t, a, 1, func(ctx context.Context, id, hash string) error {
			if _, err := a.StartItem(ctx, id, hash, time.Now().UTC()); err != nil {
				return err
			}
			close(started)
			<-release // killed: never finishes, and ignores ctx
			return nil
		})
		t.Cleanup(func() { close(release) })
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("the job did not start")
		}
		b := open(t, lease)
		r := &runs{seen: map[string]int{}}
		start(t, b, 2, stepOf(b, r))
		waitReady(t, b, within, "itm_1")
	}
	t.Run("RestartRescuesAtOnce", func(t *testing.T) {
		t.Parallel()
		rescued(t, -1, 20*time.Second)
	})
	t.Run("ReplicaRescuesAfterLease", func(t *testing.T) {
		t.Parallel()
		// River's rescuer looks every 30s on the elected leader.
		rescued(t, time.Second, 2*time.Minute)
	})
}

// Generations runs the suite of capsule generations, for stores that
// implement retrieval.Versioned: the generation moves in the transaction of
// every change to a capsule's searchable items, and never comes back.
func Generations(t *testing.T, newStore func(t *testing.T) capsule.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	st := newStore(t)
	v, ok := st.(retrieval.Versioned)
	if !ok {
		t.Fatalf("%T is not retrieval.Versioned", st)
	}
	gen := func() int64 {
		t.Helper()
		g, err := v.Generation(ctx, "docs")
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "docs", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{gen(): true}
	moved := func(what string) {
		t.Helper()
		g := gen()
		if seen[g] {
			t.Fatalf("%s: generation %d seen before", what, g)
		}
		seen[g] = true
	}
	put := func(hash string, meta map[string]any) domain.Item {
		it, _, err := st.PutItem(ctx, domain.Item{ID: "itm_1", Capsule: "docs", Kind: domain.ItemText, URI: "u", Size: 1,
			ContentHash: hash, Metadata: meta, TimeAdded: t0, TimeUpdated: t0, Status: domain.StatusQueued})
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	put("h1", nil)
	claimed, err := startQueued(ctx, st, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CompleteItem(ctx, claimed.ID, "h1", "t", []domain.Chunk{{Idx: 0, Text: "x", End: 1, Tokens: 1}}, t0); err != nil {
		t.Fatal(err)
	}
	moved("complete")
	put("h1", map[string]any{"k": "v"})
	moved("metadata update")
	put("h2", nil)
	claimed, _ = startQueued(ctx, st, t0)
	if _, err := st.FailItem(ctx, claimed.ID, "h2", "bad", t0); err != nil {
		t.Fatal(err)
	}
	moved("fail")
	if _, err := st.DeleteItem(ctx, "docs", "itm_1"); err != nil {
		t.Fatal(err)
	}
	moved("delete")
	// A capsule deleted and made again under its name gets a new generation.
	if _, err := st.DeleteCapsule(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Generation(ctx, "docs"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("generation of a deleted capsule: %v", err)
	}
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "docs", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	moved("re-created capsule")
}

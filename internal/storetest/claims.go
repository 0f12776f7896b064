package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
)

// ClaimLease runs the suite of claim leases, for stores shared by several
// processes: newStore returns a fresh store whose claims last lease
// (0: no lease, the store belongs to one process).
func ClaimLease(t *testing.T, newStore func(t *testing.T, lease time.Duration) capsule.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	setup := func(t *testing.T, lease time.Duration, items int) capsule.Store {
		st := newStore(t, lease)
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: "docs", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		for i := range items {
			id := "itm_" + string(rune('a'+i))
			if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: "docs", Kind: domain.ItemText, URI: id, Size: 1,
				ContentHash: "h" + id, TimeAdded: t0, TimeUpdated: t0, Status: domain.StatusQueued}); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}

	t.Run("ExpiredClaimIsTakenOver", func(t *testing.T) {
		t.Parallel()
		st := setup(t, time.Minute, 1)
		first, err := st.ClaimItem(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		// Within the lease the claim holds.
		if _, err := st.ClaimItem(ctx, t0.Add(59*time.Second)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("claimed again within the lease: %v", err)
		}
		// After it, another worker takes the item over and completes it.
		again, err := st.ClaimItem(ctx, t0.Add(61*time.Second))
		if err != nil || again.ID != first.ID || again.Status != domain.StatusIndexing {
			t.Fatalf("take-over: %+v %v", again, err)
		}
		if _, err := st.ClaimItem(ctx, t0.Add(62*time.Second)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("the take-over renewed the claim, yet: %v", err)
		}
		done, err := st.CompleteItem(ctx, again.ID, again.ContentHash, "text", []domain.Chunk{{Idx: 0, Text: "lease", End: 5, Tokens: 1}}, t0.Add(70*time.Second))
		if err != nil || done.Status != domain.StatusReady {
			t.Fatalf("complete: %+v %v", done, err)
		}
		if _, err := st.ClaimItem(ctx, t0.Add(time.Hour)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a ready item was claimed: %v", err)
		}
	})

	t.Run("NoLeaseNoTakeOver", func(t *testing.T) {
		t.Parallel()
		st := setup(t, 0, 1)
		if _, err := st.ClaimItem(ctx, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ClaimItem(ctx, t0.Add(24*time.Hour)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("claimed again without a lease: %v", err)
		}
		// The only process restarts: every claim is reset.
		if n, err := st.ResetIndexing(ctx); err != nil || n != 1 {
			t.Fatalf("reset: %d %v", n, err)
		}
	})

	t.Run("ResetKeepsLiveClaims", func(t *testing.T) {
		t.Parallel()
		st := setup(t, time.Minute, 2)
		live, err := st.ClaimItem(ctx, time.Now().UTC()) // a running replica's claim
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ClaimItem(ctx, t0.Add(-time.Hour)); err != nil { // a dead replica's claim
			t.Fatal(err)
		}
		if n, err := st.ResetIndexing(ctx); err != nil || n != 1 {
			t.Fatalf("reset: %d %v, want only the expired claim", n, err)
		}
		if it, err := st.GetItem(ctx, "docs", live.ID); err != nil || it.Status != domain.StatusIndexing {
			t.Fatalf("live claim: %+v %v", it, err)
		}
	})

	t.Run("RacingClaimsTakeEachItemOnce", func(t *testing.T) {
		t.Parallel()
		const n = 8
		st := setup(t, time.Minute, n)
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					it, err := st.ClaimItem(ctx, t0)
					if errors.Is(err, domain.ErrNotFound) {
						return
					} else if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[it.ID]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("%d items claimed, want %d", len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("%s claimed %d times", id, c)
			}
		}
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
	claimed, err := st.ClaimItem(ctx, t0)
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
	claimed, _ = st.ClaimItem(ctx, t0)
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

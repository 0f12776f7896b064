package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
)

// UpgradeGivesQueuedItemsJobs opens a database, puts it back as an older
// version left it (items queued or indexing in the claim queue, no jobs:
// downgrade runs the backend's SQL for that, claimedAtType being its column
// type of the old claimed_at), opens it again and checks that migration 5
// gives each of those items an ingestion job that runs. open opens (and
// migrates) the same database on every call and returns the store, a
// function that runs one SQL statement on it, and its close.
func UpgradeGivesQueuedItemsJobs(t *testing.T, claimedAtType string,
	open func(t *testing.T) (st capsule.Store, exec func(sql string) error, close func())) {
	t.Helper()
	ctx := context.Background()
	st, exec, closeDB := open(t)
	t0 := time.Now().UTC()
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "docs", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"itm_q", "itm_i", "itm_r"} {
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: "docs", Kind: domain.ItemText, URI: id, ContentHash: "h" + id,
			TimeAdded: t0, TimeUpdated: t0, Status: domain.StatusQueued}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.StartItem(ctx, "itm_r", "hitm_r", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CompleteItem(ctx, "itm_r", "hitm_r", "t", []domain.Chunk{{Idx: 0, Text: "x", End: 1, Tokens: 1}}, t0); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DELETE FROM river_job",
		"UPDATE items SET status = 'indexing' WHERE id = 'itm_i'",
		"ALTER TABLE items ADD COLUMN claimed_at " + claimedAtType,
		"DELETE FROM schema_migrations WHERE version = 5",
	} {
		if err := exec(q); err != nil {
			t.Fatal(err)
		}
	}
	closeDB()

	st, _, closeDB = open(t)
	t.Cleanup(closeDB)
	var mu sync.Mutex
	var ran []string
	if err := st.StartIngest(ctx, 2, func(ctx context.Context, id, hash string) error {
		mu.Lock()
		ran = append(ran, id+"/"+hash)
		mu.Unlock()
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.StopIngest(ctx) })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		got := slices.Sorted(slices.Values(ran))
		mu.Unlock()
		if slices.Equal(got, []string{"itm_i/hitm_i", "itm_q/hitm_q"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs ran for %v, want the queued and indexing items once", got)
		}
	}
}

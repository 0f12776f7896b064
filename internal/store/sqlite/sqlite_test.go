package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
	"capsuled/internal/storetest"
)

// openFresh opens an empty database in a test directory.
func openFresh(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAuthStore(t *testing.T) {
	t.Parallel()
	storetest.AuthStore(t, func(t *testing.T) auth.Store { return openFresh(t).Keys() })
}

func TestMigrationsAreIdempotent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "capsuled.db")
	for i := 0; i < 3; i++ {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		if err := db.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}

func TestCapsuleStore(t *testing.T) {
	t.Parallel()
	storetest.CapsuleStore(t, func(t *testing.T) capsule.Store { return openFresh(t).Capsules() })
}

func TestJobs(t *testing.T) {
	t.Parallel()
	storetest.Jobs(t, func(t *testing.T) func(t *testing.T, lease time.Duration) capsule.Store {
		path := filepath.Join(t.TempDir(), "capsuled.db")
		return func(t *testing.T, lease time.Duration) capsule.Store {
			db, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db.Capsules().WithLease(max(lease, 0))
		}
	})
}

func TestOpenReadOnlyDirectorySaysSo(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root can write a directory without write permission; internal/faulttest covers a read-only mount")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	_, err := sqlite.Open(context.Background(), filepath.Join(dir, "capsuled.db"))
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("err = %v, want one that says read-only", err)
	}
}

// TestUpgradeGivesQueuedItemsJobs opens a database as an older version left
// it (items queued or indexing in the claim queue, no jobs) and checks that
// migration 5 gives each of them an ingestion job that runs.
func TestUpgradeGivesQueuedItemsJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "capsuled.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st := db.Capsules()
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
		"ALTER TABLE items ADD COLUMN claimed_at INTEGER",
		"DELETE FROM schema_migrations WHERE version = 5",
	} {
		if _, err := db.Write().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st = db.Capsules()
	var mu sync.Mutex
	var ran []string
	if err := st.StartIngest(ctx, 2, func(ctx context.Context, id, hash string) error {
		mu.Lock()
		ran = append(ran, id+"/"+hash)
		mu.Unlock()
		return nil
	}); err != nil {
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

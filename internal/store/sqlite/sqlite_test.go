package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/capsule"
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
	path := filepath.Join(t.TempDir(), "capsuled.db")
	storetest.UpgradeGivesQueuedItemsJobs(t, "INTEGER", func(t *testing.T) (capsule.Store, func(string) error, func()) {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) error { _, err := db.Write().ExecContext(context.Background(), q); return err }
		return db.Capsules(), exec, func() { db.Close() }
	})
}

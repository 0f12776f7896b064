package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/memory"
	"capsuled/internal/store/postgres"
	"capsuled/internal/storetest"
)

// testURL is the database the tests use, from CAPSULED_TEST_POSTGRES (see
// .ci/postgres.sh); tests skip without it.
func testURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("CAPSULED_TEST_POSTGRES")
	if u == "" {
		t.Skip("CAPSULED_TEST_POSTGRES is not set: run `bash .ci/postgres.sh` and source .cache/pg/env.sh to run the PostgreSQL tests")
	}
	return u
}

// freshSchema creates an empty schema in the test database, dropped when the
// test ends, and returns a URL whose search_path starts with it (the
// extensions stay in public).
func freshSchema(t *testing.T) string {
	t.Helper()
	base := testURL(t)
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to CAPSULED_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	return u.String()
}

// openFresh opens the store on an empty schema.
func openFresh(t *testing.T, opts postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), freshSchema(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAuthStore(t *testing.T) {
	t.Parallel()
	storetest.AuthStore(t, func(t *testing.T) auth.Store { return openFresh(t, postgres.Options{}).Keys() })
}

// TestMigrationsRaceOnce opens one fresh schema from several goroutines at
// once, as replicas starting together do: every Open succeeds and each
// migration is recorded once.
func TestMigrationsRaceOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := freshSchema(t)
	const replicas = 6
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	dbs := make([]*postgres.DB, replicas)
	for i := range replicas {
		wg.Go(func() { dbs[i], errs[i] = postgres.Open(ctx, u, postgres.Options{MaxConns: 2}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	rows, err := dbs[0].Pool().Query(ctx, "SELECT version, count(*) FROM schema_migrations GROUP BY version ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Version, N int }])
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) == 0 {
		t.Fatal("no migration recorded")
	}
	for i, c := range counts {
		if c.Version != i+1 || c.N != 1 {
			t.Fatalf("schema_migrations: %+v, want versions 1..n once each", counts)
		}
	}
	// Reopening applies nothing and still works.
	again, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		url  string
		opts postgres.Options
	}{
		"bad url":          {url: "postgres://user:secret@[::1", opts: postgres.Options{}},
		"unknown fulltext": {url: "", opts: postgres.Options{FullText: "lucene"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := tc.url
			if u == "" {
				u = freshSchema(t)
			}
			db, err := postgres.Open(ctx, u, tc.opts)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if name == "bad url" && contains(err.Error(), "secret") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestCapsuleStore(t *testing.T) {
	t.Parallel()
	for _, ft := range []postgres.FullText{postgres.FullTextAuto, postgres.FullTextTSVector} {
		t.Run("fulltext="+string(ft), func(t *testing.T) {
			t.Parallel()
			storetest.CapsuleStore(t, func(t *testing.T) capsule.Store { return openFresh(t, postgres.Options{FullText: ft}).Capsules() })
		})
	}
}

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	storetest.MemoryStore(t, func(t *testing.T) memory.Store { return openFresh(t, postgres.Options{}).Memory() })
}

func TestJobs(t *testing.T) {
	t.Parallel()
	storetest.Jobs(t, func(t *testing.T) func(t *testing.T, lease time.Duration) capsule.Store {
		u := freshSchema(t)
		return func(t *testing.T, lease time.Duration) capsule.Store {
			db, err := postgres.Open(context.Background(), u, postgres.Options{ClaimLease: lease, MaxConns: 8})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db.Capsules()
		}
	})
}

func TestGenerations(t *testing.T) {
	t.Parallel()
	storetest.Generations(t, func(t *testing.T) capsule.Store { return openFresh(t, postgres.Options{}).Capsules() })
}

// TestUpgradeGivesQueuedItemsJobs opens a database as an older version left
// it (items queued or indexing in the claim queue, no jobs) and checks that
// migration 5 gives each of them an ingestion job that runs.
func TestUpgradeGivesQueuedItemsJobs(t *testing.T) {
	t.Parallel()
	u := freshSchema(t)
	storetest.UpgradeGivesQueuedItemsJobs(t, "timestamptz", func(t *testing.T) (capsule.Store, func(string) error, func()) {
		db, err := postgres.Open(context.Background(), u, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) error { _, err := db.Pool().Exec(context.Background(), q); return err }
		return db.Capsules(), exec, func() { db.Close() }
	})
}

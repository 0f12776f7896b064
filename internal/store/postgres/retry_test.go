package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// TestSessionsEndedUnderThePool ends every session of the store's pool the
// way a database restart does (the server sends each one FATAL 57P01 and
// closes it), then uses the store again: reads are sent again on fresh
// connections and succeed, a write either succeeds or fails with the
// documented 503 (never a raw driver error), and nothing written before is
// lost.
func TestSessionsEndedUnderThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(freshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	app := "capsuled-retry-" + time.Now().Format("150405.000000000")
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db, err := postgres.Open(ctx, u.String(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Capsules()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, name := range []string{"a", "b", "c"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: name, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	// Fill the pool with several idle sessions.
	errs := make(chan error, 4)
	for range 4 {
		go func() { _, err := st.ListCapsules(ctx); errs <- err }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	terminate := func() {
		t.Helper()
		admin, err := pgx.Connect(ctx, testURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no session of the pool to end")
		}
		// pg_terminate_backend only signals: wait until they are gone.
		for range 100 {
			var left int
			if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("the ended sessions did not go away")
	}

	terminate()
	if c, err := st.GetCapsule(ctx, "b"); err != nil || c.Name != "b" {
		t.Fatalf("read (QueryRow) after the sessions ended: %+v, %v", c, err)
	}
	terminate()
	if cs, err := st.ListCapsules(ctx); err != nil || len(cs) != 3 {
		t.Fatalf("read (Query) after the sessions ended: %d capsules, %v", len(cs), err)
	}
	terminate()
	err = st.CreateCapsule(ctx, domain.Capsule{Name: "d", CreatedAt: now})
	if err != nil {
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindUnavailable || de.Code != "database_unavailable" || de.RetryAfter <= 0 {
			t.Fatalf("write after the sessions ended: %v, want success or a database_unavailable 503", err)
		}
		// The client's retry.
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: "d", CreatedAt: now}); err != nil {
			t.Fatalf("retried write: %v", err)
		}
	}
	if _, err := st.GetCapsule(ctx, "d"); err != nil {
		t.Fatalf("the write is not there: %v", err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"capsuled/internal/domain"
)

func TestIsRead(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]bool{
		"SELECT 1":                           true,
		"  select * from items":              true,
		"\n\tSelect count(*) FROM x":         true,
		"INSERT INTO items VALUES (1)":       false,
		"UPDATE items SET x = 1":             false,
		"WITH d AS (DELETE FROM x) SELECT 1": false,
		"":                                   false,
		"sel":                                false,
	} {
		if got := isRead(sql); got != want {
			t.Errorf("isRead(%q) = %v, want %v", sql, got, want)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	shutdown := &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
	starting := &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}
	unique := &pgconn.PgError{Code: "23505"}
	for _, c := range []struct {
		name              string
		err               error
		sentNothing, lost bool
		unavailable       bool
	}{
		{"admin shutdown", shutdown, false, true, true},
		{"wrapped admin shutdown", fmt.Errorf("insert: %w", shutdown), false, true, true},
		{"starting up", starting, true, false, true},
		{"connection class", &pgconn.PgError{Code: "08006"}, false, true, true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false, true, true},
		{"unique violation", unique, false, false, false},
		{"plain error", errors.New("syntax"), false, false, false},
	} {
		if got := sentNothing(c.err); got != c.sentNothing {
			t.Errorf("%s: sentNothing = %v", c.name, got)
		}
		if got := sessionLost(c.err); got != c.lost {
			t.Errorf("%s: sessionLost = %v", c.name, got)
		}
		var de *domain.Error
		got := errors.As(unavailable(c.err), &de) && de.Code == "database_unavailable"
		if got != c.unavailable {
			t.Errorf("%s: unavailable = %v", c.name, got)
		}
	}
}

// TestRetryStopsAtItsWindow: a database that never comes back costs a
// request at most the retry window, then a 503.
func TestRetryStopsAtItsWindow(t *testing.T) {
	t.Parallel()
	p := &pool{retryFor: 200 * time.Millisecond}
	start := time.Now()
	calls := 0
	err := p.retry(context.Background(), true, func() error {
		calls++
		return &pgconn.PgError{Code: "57P03"}
	})
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindUnavailable {
		t.Fatalf("err = %v, want a 503", err)
	}
	if d := time.Since(start); d > time.Second || calls < 2 {
		t.Fatalf("%d calls in %v", calls, d)
	}
	// A write whose session ended is not sent again.
	calls = 0
	err = p.retry(context.Background(), false, func() error {
		calls++
		return &pgconn.PgError{Code: "57P01"}
	})
	if calls != 1 || !errors.As(err, &de) {
		t.Fatalf("write: %d calls, %v", calls, err)
	}
	// A context that ends stops the retries at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	_ = p.retry(ctx, true, func() error { calls++; return &pgconn.PgError{Code: "57P03"} })
	if calls != 1 {
		t.Fatalf("canceled: %d calls", calls)
	}
}

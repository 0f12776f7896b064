package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"capsuled/internal/domain"
)

// DefaultRetryFor is the default Options.RetryFor.
const DefaultRetryFor = 5 * time.Second

// pool is the connection pool with the retries that let a replica ride out
// a database restart or failover: a statement that failed before it reached
// the database (no connection could be made, the server refused new
// sessions while it started or stopped) is sent again on a fresh connection
// with a growing pause, for up to retryFor and never past the request's
// context. A read (a SELECT) is also sent again when the server ended its
// session under it, which is how every connection idling in the pool fails
// after a restart; a write that failed that way is not, since it may have
// been applied: its error becomes a 503 (database_unavailable) that the
// client retries. The first such session loss also drops every other idle
// connection at once, so that one restart costs one failed statement rather
// than one per pooled connection.
//
// Statements inside a transaction are not retried (pgx.Tx is the driver's);
// BEGIN itself is, since it changes nothing.
type pool struct {
	*pgxpool.Pool
	retryFor time.Duration
}

// retry runs op until it succeeds, fails for good, or the retry window or
// ctx ends. read says whether op only reads.
func (p *pool) retry(ctx context.Context, read bool, op func() error) error {
	deadline := time.Now().Add(p.retryFor)
	pause := 20 * time.Millisecond
	for {
		err := op()
		if err == nil {
			return nil
		}
		lost := sessionLost(err)
		if lost && p.Pool != nil {
			p.Reset() // every idle connection is as stale as this one
		}
		if !(sentNothing(err) || (read && lost)) || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return unavailable(err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return unavailable(err)
		case <-t.C:
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// isRead reports whether sql only reads (a retry cannot apply it twice).
func isRead(sql string) bool {
	s := strings.TrimSpace(sql)
	return len(s) >= 6 && strings.EqualFold(s[:6], "select")
}

// Exec runs a statement; see pool for its retries.
func (p *pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := p.retry(ctx, isRead(sql), func() (err error) {
		tag, err = p.Pool.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// Begin starts a transaction; see pool for its retries.
func (p *pool) Begin(ctx context.Context) (pgx.Tx, error) {
	var t pgx.Tx
	err := p.retry(ctx, true, func() (err error) {
		t, err = p.Pool.Begin(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tx{t}, nil
}

// tx is a transaction whose failures from losing the database are the
// domain's 503, wherever the code that runs it returns them from. Nothing
// in it is retried: the transaction is lost with its session.
type tx struct{ pgx.Tx }

func (t tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, unavailable(err)
}

func (t tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	return mappedRows{rows}, nil
}

func (t tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return mappedRow{t.Tx.QueryRow(ctx, sql, args...)}
}

func (t tx) Commit(ctx context.Context) error { return unavailable(t.Tx.Commit(ctx)) }

type mappedRow struct{ pgx.Row }

func (r mappedRow) Scan(dest ...any) error { return unavailable(r.Row.Scan(dest...)) }

type mappedRows struct{ pgx.Rows }

func (r mappedRows) Err() error { return unavailable(r.Rows.Err()) }

// Query runs a query. pgx reports most failures of a query when its first
// row is read, not from Query itself, so the rows retry there: until a row
// has been returned, a failed query is sent again as a retryable Exec is.
func (p *pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r := &retryRows{p: p, ctx: ctx, sql: sql, args: args}
	if err := p.retry(ctx, isRead(sql), r.open); err != nil {
		return nil, err
	}
	return r, nil
}

// QueryRow runs a query expected to return at most one row; its Scan
// retries as Query does.
func (p *pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return retryRow{p: p, ctx: ctx, sql: sql, args: args}
}

type retryRow struct {
	p    *pool
	ctx  context.Context
	sql  string
	args []any
}

func (r retryRow) Scan(dest ...any) error {
	err := r.p.retry(r.ctx, isRead(r.sql), func() error {
		err := r.p.Pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoRows{}
		}
		return err
	})
	if errors.As(err, new(errNoRows)) {
		return pgx.ErrNoRows
	}
	return err
}

// errNoRows carries pgx.ErrNoRows through retry unchanged (it is an answer,
// not a failure).
type errNoRows struct{}

func (errNoRows) Error() string { return pgx.ErrNoRows.Error() }

// retryRows is pgx.Rows whose query is sent again if it fails before its
// first row.
type retryRows struct {
	pgx.Rows
	p       *pool
	ctx     context.Context
	sql     string
	args    []any
	started bool
	err     error
}

func (r *retryRows) open() error {
	rows, err := r.p.Pool.Query(r.ctx, r.sql, r.args...)
	if err != nil {
		return err
	}
	r.Rows = rows
	return nil
}

func (r *retryRows) Next() bool {
	if r.err != nil {
		return false
	}
	if r.started {
		return r.Rows.Next()
	}
	r.started = true
	first := true
	err := r.p.retry(r.ctx, isRead(r.sql), func() error {
		if !first {
			r.Rows.Close()
			if err := r.open(); err != nil {
				return err
			}
		}
		first = false
		if r.Rows.Next() {
			return nil
		}
		if err := r.Rows.Err(); err != nil {
			return err
		}
		return errEnd{}
	})
	switch {
	case err == nil:
		return true
	case errors.As(err, new(errEnd)):
		return false
	default:
		r.err = err
		return false
	}
}

// errEnd is a query that ended with no rows (an answer, not a failure).
type errEnd struct{}

func (errEnd) Error() string { return "no rows" }

func (r *retryRows) Err() error {
	if r.err != nil {
		return r.err
	}
	if err := r.Rows.Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// sentNothing reports an error that happened before the statement reached
// the database: it cannot have been applied.
func sentNothing(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57P03" { // cannot_connect_now: starting up or shutting down
		return true
	}
	return pgconn.SafeToRetry(err)
}

// sessionLost reports an error that ended the database session: the server
// shut down, crashed or dropped the connection.
func sessionLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57P01" || pe.Code == "57P02" || strings.HasPrefix(pe.Code, "08")
	}
	var ne net.Error
	if errors.As(err, &ne) && !ne.Timeout() {
		return true // a reset or a closed socket while talking to the server
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "conn closed")
}

// unavailable turns an error that means "the database cannot be reached
// now" into the domain's 503, and leaves every other error as it is.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := domain.AsError(err); ok {
		return err
	}
	if sentNothing(err) || sessionLost(err) {
		return &domain.Error{
			Kind:       domain.KindUnavailable,
			Code:       "database_unavailable",
			Message:    "the database is unreachable or restarting; retry shortly",
			RetryAfter: 1,
			Err:        err,
		}
	}
	return err
}

package conformance_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"
)

// conformanceStore picks the store the suite runs on: "" (SQLite in the
// data directory) unless CAPSULED_CONFORMANCE_STORE=postgres, which runs it on
// a fresh schema of the CAPSULED_TEST_POSTGRES database (see
// .ci/postgres.sh); drop removes that schema.
func conformanceStore(ctx context.Context) (store string, drop func(), err error) {
	switch os.Getenv("CAPSULED_CONFORMANCE_STORE") {
	case "", "sqlite":
		return "", func() {}, nil
	case "postgres":
	default:
		return "", nil, fmt.Errorf("CAPSULED_CONFORMANCE_STORE=%q: want sqlite or postgres", os.Getenv("CAPSULED_CONFORMANCE_STORE"))
	}
	base := os.Getenv("CAPSULED_TEST_POSTGRES")
	if base == "" {
		return "", nil, errors.New("CAPSULED_CONFORMANCE_STORE=postgres needs CAPSULED_TEST_POSTGRES (bash .ci/postgres.sh && source .cache/pg/env.sh)")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "conformance_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, err
	}
	drop = func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drop schema:", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "drop schema:", err)
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	fmt.Fprintln(os.Stderr, "conformance: PostgreSQL store, schema", schema)
	return u.String(), drop, nil
}

package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
)

// TestFindItemPlan checks that FindItem reaches an item by URI through the
// unique index on (capsule_id, uri) with both columns in the index
// condition, and by content through items_by_hash: never by reading every
// item of the capsule or every entry of the URI index, which made adding
// items to a large capsule quadratic. Sequential scans are turned off, so
// the plan is the one the planner picks for a large table.
func TestFindItemPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFresh(t, postgres.Options{})
	st := db.Capsules()
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"a", "b"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			if _, _, err := st.PutItem(ctx, domain.Item{ID: fmt.Sprintf("itm_%s%03d", c, i), Capsule: c, Kind: domain.ItemText,
				URI: fmt.Sprint("u", i), ContentHash: fmt.Sprint("h", i), TimeAdded: t0, TimeUpdated: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct{ uri, hash, want string }{
		{"u7", "nope", "itm_b007"},
		{"nope", "h9", "itm_b009"},
		{"nope", "nope", ""},
	} {
		it, err := st.FindItem(ctx, "b", tc.uri, domain.ItemText, "", tc.hash)
		if tc.want == "" {
			if err != domain.ErrNotFound {
				t.Fatalf("%+v: %v, want ErrNotFound", tc, err)
			}
			continue
		}
		if err != nil || it.ID != tc.want {
			t.Fatalf("%+v: %s %v", tc, it.ID, err)
		}
	}
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "ANALYZE items; SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET enable_seqscan") //nolint:errcheck // the pool's connection goes on with the default
	rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) "+postgres.FindItemSQL, "b", "nope", "text", "", "nope")
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	p := plan.String()
	if !strings.Contains(p, "items_capsule_id_uri_key") || !strings.Contains(p, "items_by_hash") ||
		!strings.Contains(p, "Index Cond: ((capsule_id = ") || strings.Contains(p, "Seq Scan on items") {
		t.Errorf("FindItem's plan reads more than the two indexes' entries:\n%s", p)
	}
}

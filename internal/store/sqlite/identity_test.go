package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindItemUsesIndexes: each of FindItem's lookups searches the items
// table through an index rather than scanning the capsule's items, so that
// adding an item costs the same in a capsule of a million chunks as in an
// empty one.
func TestFindItemUsesIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, q := range map[string]string{"by URI": findByURI, "by content": findByContent} {
		rows, err := db.read.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, "c", "u", "text", "", "h")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "; ")
		// items_by_capsule (capsule_id=?) would walk every item of the
		// capsule.
		if !strings.Contains(all, "SEARCH i USING INDEX") || strings.Contains(all, "SCAN i") || strings.Contains(all, "items_by_capsule") {
			t.Errorf("FindItem %s: plan %q, want a search of items through the URI's or the hash's index", name, all)
		}
	}
}

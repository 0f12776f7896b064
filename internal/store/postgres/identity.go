package postgres

import (
	"context"

	"capsuled/internal/domain"
)

// FindItem returns the capsule's item with the URI, else its oldest item of
// the kind and file type holding the content hash; ErrNotFound when there
// is neither.
func (s *CapsuleStore) FindItem(ctx context.Context, capsule, uri string, kind domain.ItemKind, fileType, hash string) (domain.Item, error) {
	return scanItem(s.db.pool.QueryRow(ctx, findItem, capsule, uri, string(kind), fileType, hash))
}

// findItem is FindItem's two lookups in one statement: the URI through the
// unique index (capsule_id, uri), and only when that finds nothing (an
// Append stops at its LIMIT) the content through items_by_hash. The
// capsule's id is a parameter of both index conditions (an InitPlan): with
// one query whose URI and content tests were ORed, and the capsule joined,
// the planner read the whole (capsule_id, uri) index for the URI, every
// capsule's items, on each item added (TestFindItemPlan).
const findItem = `WITH cap AS MATERIALIZED (SELECT id FROM capsules WHERE name = $1)
	(SELECT ` + itemColumns + itemFrom + ` WHERE i.capsule_id = (SELECT id FROM cap) AND i.uri = $2)
	UNION ALL
	(SELECT ` + itemColumns + itemFrom + ` WHERE i.capsule_id = (SELECT id FROM cap) AND i.content_hash = $5
		AND i.kind = $3 AND i.file_type = $4 ORDER BY i.id LIMIT 1)
	LIMIT 1`

package sqlite

import (
	"context"
	"errors"

	"capsuled/internal/domain"
)

// FindItem returns the capsule's item with the URI, else its oldest item of
// the kind and file type holding the content hash; ErrNotFound when there
// is neither. Two lookups, each through an index (the URI's unique index,
// then items_by_hash): one query with OR scanned every item of the capsule,
// which made adding items to a large capsule quadratic.
func (s *CapsuleStore) FindItem(ctx context.Context, capsule, uri string, kind domain.ItemKind, fileType, hash string) (domain.Item, error) {
	it, err := scanItem(s.db.read.QueryRowContext(ctx, findByURI, capsule, uri))
	if !errors.Is(err, domain.ErrNotFound) {
		return it, err
	}
	return scanItem(s.db.read.QueryRowContext(ctx, findByContent, capsule, hash, string(kind), fileType))
}

// FindItem's two lookups.
const (
	findByURI = "SELECT " + itemColumns + itemFrom + " WHERE c.name = ? AND i.uri = ?"
	// Without INDEXED BY the planner walks items_by_capsule for the
	// ORDER BY: every item of the capsule.
	findByContent = "SELECT " + itemColumns + ` FROM items i INDEXED BY items_by_hash JOIN capsules c ON c.id = i.capsule_id
		WHERE c.name = ? AND i.content_hash = ? AND i.kind = ? AND i.file_type = ? ORDER BY i.id LIMIT 1`
)

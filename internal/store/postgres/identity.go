package postgres

import (
	"context"

	"capsuled/internal/domain"
)

// FindItem returns the capsule's item with the URI, else its oldest item of
// the kind holding the content hash; ErrNotFound when there is neither.
func (s *CapsuleStore) FindItem(ctx context.Context, capsule, uri string, kind domain.ItemKind, hash string) (domain.Item, error) {
	return scanItem(s.db.pool.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+
		` WHERE c.name = $1 AND (i.uri = $2 OR (i.kind = $3 AND i.content_hash = $4))
		ORDER BY i.uri = $2 DESC, i.id LIMIT 1`, capsule, uri, string(kind), hash))
}

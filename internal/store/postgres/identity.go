package postgres

import (
	"context"

	"capsuled/internal/domain"
)

// FindItem returns the capsule's item with the URI, else its oldest item of
// the kind and file type holding the content hash; ErrNotFound when there
// is neither.
func (s *CapsuleStore) FindItem(ctx context.Context, capsule, uri string, kind domain.ItemKind, fileType, hash string) (domain.Item, error) {
	return scanItem(s.db.pool.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+
		` WHERE c.name = $1 AND (i.uri = $2 OR (i.kind = $3 AND i.file_type = $4 AND i.content_hash = $5))
		ORDER BY i.uri = $2 DESC, i.id LIMIT 1`, capsule, uri, string(kind), fileType, hash))
}

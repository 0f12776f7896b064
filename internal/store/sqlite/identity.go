package sqlite

import (
	"context"

	"capsuled/internal/domain"
)

// FindItem returns the capsule's item with the URI, else its oldest item of
// the kind and file type holding the content hash; ErrNotFound when there
// is neither.
func (s *CapsuleStore) FindItem(ctx context.Context, capsule, uri string, kind domain.ItemKind, fileType, hash string) (domain.Item, error) {
	return scanItem(s.db.read.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+
		` WHERE c.name = ? AND (i.uri = ? OR (i.kind = ? AND i.file_type = ? AND i.content_hash = ?))
		ORDER BY i.uri = ? DESC, i.id LIMIT 1`, capsule, uri, string(kind), fileType, hash, uri))
}

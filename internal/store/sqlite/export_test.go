package sqlite

import (
	"context"

	"capsuled/internal/domain"
)

// KeywordIndexed reports whether the capsule's keyword search runs on a
// built in-process index (tests).
func KeywordIndexed(ctx context.Context, db *DB, capsule string) bool {
	sc, err := db.Capsules().keywordScope(ctx, capsule)
	return err == nil && db.Capsules().kwIndexOf(sc) != nil
}

// KeywordIndexSizes reports a built index's documents, terms, postings and
// posting bytes (tests).
func KeywordIndexSizes(ctx context.Context, db *DB, capsule string) (docs, terms, postings, bytes int) {
	sc, err := db.Capsules().keywordScope(ctx, capsule)
	if err != nil {
		return
	}
	ix := db.Capsules().kwIndexOf(sc)
	if ix == nil {
		return
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, p := range ix.terms {
		postings += p.n
		bytes += len(p.data)
	}
	return len(ix.rowids), len(ix.terms), postings, bytes
}

// KeywordIndexFromFile reports whether the capsule's built index was read
// from its file (tests).
func KeywordIndexFromFile(ctx context.Context, db *DB, capsule string) bool {
	sc, err := db.Capsules().keywordScope(ctx, capsule)
	if err != nil {
		return false
	}
	ix := db.Capsules().kwIndexOf(sc)
	if ix == nil {
		return false
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.fromFile
}

// SearchableItemsInParts is SearchableItems read in up to parts id ranges
// of at least perPart items (tests).
func SearchableItemsInParts(ctx context.Context, st *CapsuleStore, capsule string, perPart, parts int) ([]domain.Item, error) {
	return st.searchableItems(ctx, capsule, perPart, parts)
}

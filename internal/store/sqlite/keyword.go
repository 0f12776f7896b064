package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"capsuled/internal/domain"
)

// SearchableItems returns the capsule's items that have chunks in the index.
func (s *CapsuleStore) SearchableItems(ctx context.Context, capsule string) ([]domain.Item, error) {
	rows, err := s.db.read.QueryContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE c.name = ? AND i.indexed_hash IS NOT NULL ORDER BY i.id", capsule)
	if err != nil {
		return nil, fmt.Errorf("searchable items: %w", err)
	}
	defer rows.Close()
	var out []domain.Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ChunkVectors calls fn with every chunk vector of the capsule, by item and
// idx (chunks without a vector are skipped).
func (s *CapsuleStore) ChunkVectors(ctx context.Context, capsule string, fn func(itemID string, idx int, vec []float32) error) error {
	rows, err := s.db.read.QueryContext(ctx, `SELECT k.item_id, k.idx, k.vector FROM chunks k
		WHERE k.capsule_id = (SELECT id FROM capsules WHERE name = ?) AND k.vector IS NOT NULL ORDER BY k.item_id, k.idx`, capsule)
	if err != nil {
		return fmt.Errorf("chunk vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var idx int
		var v []byte
		if err := rows.Scan(&id, &idx, &v); err != nil {
			return err
		}
		if err := fn(id, idx, DecodeVector(v)); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Keyword calls fn with the capsule's chunks that match any of the terms, in
// BM25 order (best first), with the positive BM25 score, until fn returns
// false.
func (s *CapsuleStore) Keyword(ctx context.Context, capsule string, terms []string, fn func(itemID string, idx int, score float64) bool) error {
	if len(terms) == 0 {
		return nil
	}
	var capID int64
	if err := s.db.read.QueryRowContext(ctx, "SELECT id FROM capsules WHERE name = ?", capsule).Scan(&capID); err != nil {
		return interpret(err)
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	match := "cap : " + capToken(capID) + " AND body : (" + strings.Join(quoted, " OR ") + ")"
	rows, err := s.db.read.QueryContext(ctx, `SELECT k.item_id, k.idx, -bm25(chunks_fts, 1.0, 0.0) AS s
		FROM chunks_fts JOIN chunks k ON k.id = chunks_fts.rowid WHERE chunks_fts MATCH ? ORDER BY s DESC, k.item_id, k.idx`, match)
	if err != nil {
		return fmt.Errorf("keyword search: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var idx int
		var score float64
		if err := rows.Scan(&id, &idx, &score); err != nil {
			return err
		}
		if !fn(id, idx, score) {
			return nil
		}
	}
	return rows.Err()
}

// ChunkText returns the text of one chunk.
func (s *CapsuleStore) ChunkText(ctx context.Context, itemID string, idx int) (string, error) {
	var text string
	err := s.db.read.QueryRowContext(ctx, "SELECT text FROM chunks WHERE item_id = ? AND idx = ?", itemID, idx).Scan(&text)
	return text, interpret(err)
}

func capToken(id int64) string { return "c" + strconv.FormatInt(id, 10) }

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"capsuled/internal/domain"
)

// EmbeddingSpace returns the embedding model recorded for the chunk
// vectors; the zero space when none is.
func (s *CapsuleStore) EmbeddingSpace(ctx context.Context) (domain.EmbeddingSpace, error) {
	var sp domain.EmbeddingSpace
	err := s.db.read.QueryRowContext(ctx, "SELECT model, dimensions FROM embedding_space WHERE id = 1").Scan(&sp.Model, &sp.Dimensions)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.EmbeddingSpace{}, nil
	}
	if err != nil {
		return domain.EmbeddingSpace{}, fmt.Errorf("embedding space: %w", interpret(err))
	}
	return sp, nil
}

// UseEmbeddingSpace records the space of the chunk vectors and, in the same
// transaction, removes the vectors that are not of it: every vector when
// another model was recorded, those of another width when none was. It
// returns how many chunks lost their vector.
func (s *CapsuleStore) UseEmbeddingSpace(ctx context.Context, sp domain.EmbeddingSpace, at time.Time) (int, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var cur domain.EmbeddingSpace
	err = tx.QueryRowContext(ctx, "SELECT model, dimensions FROM embedding_space WHERE id = 1").Scan(&cur.Model, &cur.Dimensions)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, interpret(err)
	}
	if cur == sp {
		return 0, nil
	}
	var res sql.Result
	if cur.Model == "" {
		res, err = tx.ExecContext(ctx, "UPDATE chunks SET vector = NULL WHERE vector IS NOT NULL AND length(vector) != ?", 4*sp.Dimensions)
	} else {
		res, err = tx.ExecContext(ctx, "UPDATE chunks SET vector = NULL WHERE vector IS NOT NULL")
	}
	if err != nil {
		return 0, fmt.Errorf("remove vectors: %w", interpret(err))
	}
	removed, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `INSERT INTO embedding_space (id, model, dimensions, updated_at) VALUES (1, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions, updated_at = excluded.updated_at`,
		sp.Model, sp.Dimensions, millis(at)); err != nil {
		return 0, fmt.Errorf("record embedding space: %w", interpret(err))
	}
	return int(removed), tx.Commit()
}

// VectorBacklog counts the ready items with chunks without a vector, and
// those chunks.
func (s *CapsuleStore) VectorBacklog(ctx context.Context) (items, chunks int, err error) {
	err = s.db.read.QueryRowContext(ctx, `SELECT count(DISTINCT k.item_id), count(*) FROM chunks k
		JOIN items i ON i.id = k.item_id WHERE k.vector IS NULL AND i.status = ?`, string(domain.StatusReady)).Scan(&items, &chunks)
	if err != nil {
		return 0, 0, fmt.Errorf("vector backlog: %w", interpret(err))
	}
	return items, chunks, nil
}

// ItemsWithoutVectors lists, in id order after the id after, up to limit
// ready items that have chunks without a vector.
func (s *CapsuleStore) ItemsWithoutVectors(ctx context.Context, after string, limit int) ([]domain.Item, error) {
	rows, err := s.db.read.QueryContext(ctx, "SELECT "+itemColumns+itemFrom+` WHERE i.status = ? AND i.id > ?
		AND EXISTS (SELECT 1 FROM chunks k WHERE k.item_id = i.id AND k.vector IS NULL) ORDER BY i.id LIMIT ?`,
		string(domain.StatusReady), after, limit)
	if err != nil {
		return nil, fmt.Errorf("items without vectors: %w", err)
	}
	return collect(rows, scanItem)
}

// ItemChunks returns an item's chunks in order, with their vectors (nil
// where a chunk has none).
func (s *CapsuleStore) ItemChunks(ctx context.Context, itemID string) ([]domain.Chunk, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT idx, text, start_off, end_off, tokens, vector FROM chunks
		WHERE item_id = ? ORDER BY idx`, itemID)
	if err != nil {
		return nil, fmt.Errorf("item chunks: %w", err)
	}
	return collect(rows, func(r scanner) (domain.Chunk, error) {
		c := domain.Chunk{ItemID: itemID}
		var vec []byte
		if err := r.Scan(&c.Idx, &c.Text, &c.Start, &c.End, &c.Tokens, &vec); err != nil {
			return domain.Chunk{}, err
		}
		if vec != nil {
			c.Vector = DecodeVector(vec)
		}
		return c, nil
	})
}

// SetChunkVectors gives the item's chunks that have no vector the vectors
// of chunks (by Idx), in one transaction, and returns the item: only while
// it is ready with the content hash, else ErrConflict.
func (s *CapsuleStore) SetChunkVectors(ctx context.Context, itemID, hash string, chunks []domain.Chunk) (domain.Item, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM items WHERE id = ? AND content_hash = ? AND status = ?
		AND indexed_hash = content_hash`, itemID, hash, string(domain.StatusReady)).Scan(&n); err != nil {
		return domain.Item{}, interpret(err)
	}
	if n == 0 {
		return domain.Item{}, fmt.Errorf("set vectors of item %s: %w", itemID, domain.ErrConflict)
	}
	st, err := tx.PrepareContext(ctx, "UPDATE chunks SET vector = ? WHERE item_id = ? AND idx = ? AND vector IS NULL")
	if err != nil {
		return domain.Item{}, err
	}
	defer st.Close()
	for _, c := range chunks {
		if c.Vector == nil {
			continue
		}
		if _, err := st.ExecContext(ctx, EncodeVector(c.Vector), itemID, c.Idx); err != nil {
			return domain.Item{}, fmt.Errorf("set vector of chunk %d: %w", c.Idx, interpret(err))
		}
	}
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = ?", itemID))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit()
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"capsuled/internal/domain"
)

// EmbeddingSpace returns the embedding model recorded for the chunk
// vectors; the zero space when none is.
func (s *CapsuleStore) EmbeddingSpace(ctx context.Context) (domain.EmbeddingSpace, error) {
	var sp domain.EmbeddingSpace
	err := s.db.pool.QueryRow(ctx, "SELECT model, dimensions FROM embedding_space WHERE id = 1").Scan(&sp.Model, &sp.Dimensions)
	if errors.Is(err, pgx.ErrNoRows) {
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
// returns how many chunks lost their vector. The row lock serializes
// replicas starting together.
func (s *CapsuleStore) UseEmbeddingSpace(ctx context.Context, sp domain.EmbeddingSpace, at time.Time) (int, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if _, err := tx.Exec(ctx, "LOCK TABLE embedding_space IN EXCLUSIVE MODE"); err != nil {
		return 0, interpret(err)
	}
	var cur domain.EmbeddingSpace
	err = tx.QueryRow(ctx, "SELECT model, dimensions FROM embedding_space WHERE id = 1").Scan(&cur.Model, &cur.Dimensions)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, interpret(err)
	}
	if cur == sp {
		return 0, nil
	}
	q := "UPDATE chunks SET embedding = NULL WHERE embedding IS NOT NULL RETURNING capsule_id"
	args := []any{}
	if cur.Model == "" {
		q = "UPDATE chunks SET embedding = NULL WHERE embedding IS NOT NULL AND vector_dims(embedding) != $1 RETURNING capsule_id"
		args = append(args, sp.Dimensions)
	}
	rows, err := tx.Query(ctx, "WITH cleared AS ("+q+") SELECT capsule_id, count(*) FROM cleared GROUP BY capsule_id", args...)
	if err != nil {
		return 0, fmt.Errorf("remove vectors: %w", interpret(err))
	}
	type cleared struct{ capID, n int64 }
	caps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cleared, error) {
		var c cleared
		return c, r.Scan(&c.capID, &c.n)
	})
	if err != nil {
		return 0, fmt.Errorf("remove vectors: %w", interpret(err))
	}
	removed := 0
	for _, c := range caps {
		removed += int(c.n)
		if err := bump(ctx, tx, c.capID); err != nil {
			return 0, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO embedding_space (id, model, dimensions, updated_at) VALUES (1, $1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions, updated_at = excluded.updated_at`,
		sp.Model, sp.Dimensions, at); err != nil {
		return 0, fmt.Errorf("record embedding space: %w", interpret(err))
	}
	return removed, tx.Commit(ctx)
}

// VectorBacklog counts the ready items with chunks without a vector, and
// those chunks.
func (s *CapsuleStore) VectorBacklog(ctx context.Context) (items, chunks int, err error) {
	err = s.db.pool.QueryRow(ctx, `SELECT count(DISTINCT k.item_id), count(*) FROM chunks k
		JOIN items i ON i.id = k.item_id WHERE k.embedding IS NULL AND i.status = $1`, string(domain.StatusReady)).Scan(&items, &chunks)
	if err != nil {
		return 0, 0, fmt.Errorf("vector backlog: %w", interpret(err))
	}
	return items, chunks, nil
}

// ItemsWithoutVectors lists, in id order after the id after, up to limit
// ready items that have chunks without a vector.
func (s *CapsuleStore) ItemsWithoutVectors(ctx context.Context, after string, limit int) ([]domain.Item, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT "+itemColumns+itemFrom+` WHERE i.status = $1 AND i.id > $2
		AND EXISTS (SELECT 1 FROM chunks k WHERE k.item_id = i.id AND k.embedding IS NULL) ORDER BY i.id LIMIT $3`,
		string(domain.StatusReady), after, limit)
	if err != nil {
		return nil, fmt.Errorf("items without vectors: %w", interpret(err))
	}
	return collect(rows, scanItem)
}

// ItemChunks returns an item's chunks in order, with their vectors (nil
// where a chunk has none).
func (s *CapsuleStore) ItemChunks(ctx context.Context, itemID string) ([]domain.Chunk, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT idx, text, start_off, end_off, tokens, embedding FROM chunks
		WHERE item_id = $1 ORDER BY idx`, itemID)
	if err != nil {
		return nil, fmt.Errorf("item chunks: %w", interpret(err))
	}
	return collect(rows, func(r pgx.Row) (domain.Chunk, error) {
		c := domain.Chunk{ItemID: itemID}
		var vec *pgvector.Vector
		if err := r.Scan(&c.Idx, &c.Text, &c.Start, &c.End, &c.Tokens, &vec); err != nil {
			return domain.Chunk{}, err
		}
		if vec != nil {
			c.Vector = vec.Slice()
		}
		return c, nil
	})
}

// SetChunkVectors gives the item's chunks that have no vector the vectors
// of chunks (by Idx), in one transaction that moves the capsule's
// generation, and returns the item: only while it is ready with the content
// hash, else ErrConflict.
func (s *CapsuleStore) SetChunkVectors(ctx context.Context, itemID, hash string, chunks []domain.Chunk) (domain.Item, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var capID int64
	err = tx.QueryRow(ctx, `SELECT capsule_id FROM items WHERE id = $1 AND content_hash = $2 AND status = $3
		AND indexed_hash = content_hash FOR UPDATE`, itemID, hash, string(domain.StatusReady)).Scan(&capID)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Item{}, fmt.Errorf("set vectors of item %s: %w", itemID, domain.ErrConflict)
	} else if err != nil {
		return domain.Item{}, interpret(err)
	}
	b := &pgx.Batch{}
	for _, c := range chunks {
		if c.Vector != nil {
			b.Queue("UPDATE chunks SET embedding = $1 WHERE item_id = $2 AND idx = $3 AND embedding IS NULL",
				pgvector.NewVector(c.Vector), itemID, c.Idx)
		}
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return domain.Item{}, fmt.Errorf("set vectors: %w", interpret(err))
		}
	}
	if err := bump(ctx, tx, capID); err != nil {
		return domain.Item{}, err
	}
	it, err := scanItem(tx.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = $1", itemID))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit(ctx)
}

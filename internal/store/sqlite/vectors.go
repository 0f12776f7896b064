package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
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
// those chunks. The CROSS JOIN keeps SQLite's join order: the chunks
// without a vector (the partial index chunks_without_vector, usually
// empty) first. With a plain JOIN the planner walked every ready item and
// probed that index for each: 0.4 s at start-up for 130,000 items, against
// milliseconds.
func (s *CapsuleStore) VectorBacklog(ctx context.Context) (items, chunks int, err error) {
	err = s.db.read.QueryRowContext(ctx, `SELECT count(DISTINCT k.item_id), count(*) FROM chunks k
		CROSS JOIN items i ON i.id = k.item_id WHERE k.vector IS NULL AND i.status = ?`, string(domain.StatusReady)).Scan(&items, &chunks)
	if err != nil {
		return 0, 0, fmt.Errorf("vector backlog: %w", interpret(err))
	}
	return items, chunks, nil
}

// ItemsWithoutVectors lists, in id order after the id after, up to limit
// ready items that have chunks without a vector. The item ids come from
// the partial index chunks_without_vector, walked in its order (grouped
// by item, so the LIMIT stops the walk): a page costs what it returns,
// where probing every ready item for chunks without a vector cost a walk
// of all of them per page.
func (s *CapsuleStore) ItemsWithoutVectors(ctx context.Context, after string, limit int) ([]domain.Item, error) {
	rows, err := s.db.read.QueryContext(ctx, "SELECT "+itemColumns+` FROM chunks k CROSS JOIN items i ON i.id = k.item_id
		JOIN capsules c ON c.id = i.capsule_id WHERE k.vector IS NULL AND k.item_id > ? AND i.status = ?
		GROUP BY k.item_id ORDER BY k.item_id LIMIT ?`,
		after, string(domain.StatusReady), limit)
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

// chunkSum is the vector count and checksum (vecmath.Checksum, in idx
// order) of chunks, as VectorSums reports them.
func chunkSum(chunks []domain.Chunk) (int, int64) {
	order := make([]int, 0, len(chunks))
	for i, c := range chunks {
		if c.Vector != nil {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(chunks[a].Idx, chunks[b].Idx) })
	var crc uint32
	for _, i := range order {
		crc = vecmath.ChecksumUpdate(crc, chunks[i].Vector)
	}
	return len(order), int64(crc)
}

// sumBatch is how many items' unknown sums VectorSums computes in one
// write transaction (reading their vectors), so that a store upgraded
// with large capsules does not hold the writer for long.
const sumBatch = 2000

// VectorSums calls fn with each searchable item of the capsule, the
// number of its chunk vectors and their CRC-32C (vecmath.Checksum of the
// vectors in idx order): the store keeps them beside the item, set in the
// transaction that writes its chunks (and forgotten by triggers on any
// other change of them). Sums not known (items written before they were
// kept, or by another writer) are computed from the chunks here and kept.
func (s *CapsuleStore) VectorSums(ctx context.Context, capsule string, fn func(itemID string, count int, crc uint32) error) error {
	var unknown []string
	err := func() error {
		rows, err := s.db.read.QueryContext(ctx, `SELECT i.id, i.vec_count, i.vec_crc FROM items i
			WHERE i.capsule_id = (SELECT id FROM capsules WHERE name = ?) AND i.indexed_hash IS NOT NULL ORDER BY i.id`, capsule)
		if err != nil {
			return fmt.Errorf("vector sums: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var count, crc sql.NullInt64
			if err := rows.Scan(&id, &count, &crc); err != nil {
				return fmt.Errorf("vector sums: %w", err)
			}
			if !count.Valid || !crc.Valid {
				unknown = append(unknown, id)
				continue
			}
			if err := fn(id, int(count.Int64), uint32(crc.Int64)); err != nil {
				return err
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return err
	}
	for len(unknown) > 0 {
		n := min(len(unknown), sumBatch)
		if err := s.computeSums(ctx, unknown[:n], fn); err != nil {
			return err
		}
		unknown = unknown[n:]
	}
	return nil
}

// computeSums computes and keeps the vector sums of items, in one write
// transaction, and calls fn with each (items no longer searchable are
// skipped).
func (s *CapsuleStore) computeSums(ctx context.Context, items []string, fn func(itemID string, count int, crc uint32) error) error {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT i.id, k.vector FROM items i JOIN chunks k ON k.item_id = i.id
		WHERE i.id IN (SELECT value FROM json_each(?)) AND i.indexed_hash IS NOT NULL AND k.vector IS NOT NULL ORDER BY i.id, k.idx`, string(b))
	if err != nil {
		return fmt.Errorf("vector sums: %w", err)
	}
	type sum struct {
		id    string
		count int
		crc   uint32
	}
	var sums []sum
	for rows.Next() {
		var id string
		var v []byte
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return fmt.Errorf("vector sums: %w", err)
		}
		if len(sums) == 0 || sums[len(sums)-1].id != id {
			sums = append(sums, sum{id: id})
		}
		last := &sums[len(sums)-1]
		last.count++
		last.crc = vecmath.ChecksumBytes(last.crc, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("vector sums: %w", err)
	}
	// Searchable items without any vector have the empty sum.
	have := make(map[string]bool, len(sums))
	for _, x := range sums {
		have[x.id] = true
	}
	empty, err := func() ([]string, error) {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM items WHERE id IN (SELECT value FROM json_each(?)) AND indexed_hash IS NOT NULL", string(b))
		if err != nil {
			return nil, err
		}
		return collect(rows, func(r scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
	}()
	if err != nil {
		return fmt.Errorf("vector sums: %w", err)
	}
	for _, id := range empty {
		if !have[id] {
			sums = append(sums, sum{id: id})
		}
	}
	st, err := tx.PrepareContext(ctx, "UPDATE items SET vec_count = ?, vec_crc = ? WHERE id = ?")
	if err != nil {
		return err
	}
	defer st.Close()
	for _, x := range sums {
		if _, err := st.ExecContext(ctx, x.count, int64(x.crc), x.id); err != nil {
			return fmt.Errorf("keep vector sums: %w", interpret(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, x := range sums {
		if err := fn(x.id, x.count, x.crc); err != nil {
			return err
		}
	}
	return nil
}

// ItemVectors calls fn with every chunk vector of the items, by item and
// idx (in that order; chunks without a vector are skipped).
func (s *CapsuleStore) ItemVectors(ctx context.Context, items []string, fn func(itemID string, idx int, vec []float32) error) error {
	for len(items) > 0 {
		n := min(len(items), sumBatch)
		b, err := json.Marshal(items[:n])
		if err != nil {
			return err
		}
		items = items[n:]
		rows, err := s.db.read.QueryContext(ctx, `SELECT item_id, idx, vector FROM chunks
			WHERE item_id IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL ORDER BY item_id, idx`, string(b))
		if err != nil {
			return fmt.Errorf("item vectors: %w", err)
		}
		for rows.Next() {
			var id string
			var idx int
			var v []byte
			if err = rows.Scan(&id, &idx, &v); err != nil {
				break
			}
			if err = fn(id, idx, DecodeVector(v)); err != nil {
				break
			}
		}
		if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("item vectors: %w", err)
		}
	}
	return nil
}

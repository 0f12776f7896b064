package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"capsuled/internal/domain"
)

// CapsuleStore implements the capsule service's store and the retrieval
// source on the database.
type CapsuleStore struct {
	db    *DB
	lease time.Duration // job rescue; negative: the store belongs to one process
}

// WithLease returns the store with another job lease: an ingestion job that
// has run longer than the lease is presumed dead (its replica stopped) and
// run again by any replica (river's RescueStuckJobsAfter). Set it longer
// than the ingestion of one item may take (a live job run twice only costs
// duplicate work: completion is guarded by the item's status and content
// hash). Negative: one process owns the database.
func (s *CapsuleStore) WithLease(lease time.Duration) *CapsuleStore {
	c := *s
	c.lease = lease
	return &c
}

// Capsules returns the capsule, item and chunk store.
// Its job lease is Options.ClaimLease.
func (db *DB) Capsules() *CapsuleStore { return &CapsuleStore{db: db, lease: db.claimLease} }

// CreateCapsule stores a new capsule (ErrConflict when the name is taken).
func (s *CapsuleStore) CreateCapsule(ctx context.Context, c domain.Capsule) error {
	_, err := s.db.pool.Exec(ctx, "INSERT INTO capsules (name, description, created_at) VALUES ($1, $2, $3)",
		c.Name, c.Description, c.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert capsule: %w", interpret(err))
	}
	return nil
}

const capsuleQuery = `SELECT c.name, c.description, c.created_at,
	(SELECT count(*) FROM items i WHERE i.capsule_id = c.id),
	(SELECT count(*) FROM chunks k WHERE k.capsule_id = c.id)
	FROM capsules c`

// GetCapsule returns a capsule with its item and chunk counts.
func (s *CapsuleStore) GetCapsule(ctx context.Context, name string) (domain.Capsule, error) {
	return scanCapsule(s.db.pool.QueryRow(ctx, capsuleQuery+" WHERE c.name = $1", name))
}

// HasCapsule reports whether the capsule exists.
func (s *CapsuleStore) HasCapsule(ctx context.Context, name string) (bool, error) {
	var ok bool
	if err := s.db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM capsules WHERE name = $1)", name).Scan(&ok); err != nil {
		return false, fmt.Errorf("has capsule: %w", err)
	}
	return ok, nil
}

// ListCapsules lists every capsule by name.
func (s *CapsuleStore) ListCapsules(ctx context.Context) ([]domain.Capsule, error) {
	rows, err := s.db.pool.Query(ctx, capsuleQuery+" ORDER BY c.name")
	if err != nil {
		return nil, fmt.Errorf("list capsules: %w", err)
	}
	return collect(rows, scanCapsule)
}

func scanCapsule(r pgx.Row) (domain.Capsule, error) {
	var c domain.Capsule
	if err := r.Scan(&c.Name, &c.Description, &c.CreatedAt, &c.ItemCount, &c.ChunkCount); err != nil {
		return domain.Capsule{}, interpret(err)
	}
	c.CreatedAt = utc(c.CreatedAt)
	return c, nil
}

// collect scans every row with scan.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteCapsule deletes a capsule with its items, chunks and texts in one
// transaction, and returns the content hashes its items held.
func (s *CapsuleStore) DeleteCapsule(ctx context.Context, name string) ([]string, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var id int64
	if err := tx.QueryRow(ctx, "SELECT id FROM capsules WHERE name = $1 FOR UPDATE", name).Scan(&id); err != nil {
		return nil, interpret(err)
	}
	rows, err := tx.Query(ctx, "SELECT DISTINCT content_hash FROM items WHERE capsule_id = $1 ORDER BY 1", id)
	if err != nil {
		return nil, err
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM capsules WHERE id = $1", id); err != nil { // items, chunks and texts cascade
		return nil, fmt.Errorf("delete capsule: %w", interpret(err))
	}
	return hashes, tx.Commit(ctx)
}

const itemColumns = `i.id, c.name, i.kind, i.uri, i.file_name, i.file_type, i.size, i.content_hash, i.metadata,
	i.time_added, i.time_authored, i.time_updated, i.status, i.error, i.chunk_count`

const itemFrom = " FROM items i JOIN capsules c ON c.id = i.capsule_id"

func scanItem(r pgx.Row) (domain.Item, error) {
	var it domain.Item
	var kind, status string
	var meta []byte
	var errText *string
	if err := r.Scan(&it.ID, &it.Capsule, &kind, &it.URI, &it.FileName, &it.FileType, &it.Size, &it.ContentHash, &meta,
		&it.TimeAdded, &it.TimeAuthored, &it.TimeUpdated, &status, &errText, &it.ChunkCount); err != nil {
		return domain.Item{}, interpret(err)
	}
	it.Kind, it.Status = domain.ItemKind(kind), domain.ItemStatus(status)
	if errText != nil {
		it.Error = *errText
	}
	it.TimeAdded, it.TimeAuthored, it.TimeUpdated = utc(it.TimeAdded), utcPtr(it.TimeAuthored), utc(it.TimeUpdated)
	if err := json.Unmarshal(meta, &it.Metadata); err != nil {
		return domain.Item{}, fmt.Errorf("item %s: metadata: %w", it.ID, err)
	}
	if it.Metadata == nil {
		it.Metadata = map[string]any{}
	}
	return it, nil
}

func marshalMeta(m map[string]any) (string, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	return string(b), nil
}

// PutItem adds an item, or updates the capsule's item with the same URI.
// created reports a new row. An update with the same content hash changes
// only the metadata and authored time and keeps the item's status; new
// content queues the item again (its old chunks stay searchable until the new
// ones replace them). The item's ID, TimeAdded and Status are used only when
// it is created. Concurrent puts of one URI (from any replica) serialize on
// the row. A new or changed item gets its ingestion job in the same
// transaction; an unchanged one none.
func (s *CapsuleStore) PutItem(ctx context.Context, it domain.Item) (domain.Item, bool, error) {
	meta, err := marshalMeta(it.Metadata)
	if err != nil {
		return domain.Item{}, false, err
	}
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return domain.Item{}, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var capID int64
	if err := tx.QueryRow(ctx, "SELECT id FROM capsules WHERE name = $1", it.Capsule).Scan(&capID); err != nil {
		return domain.Item{}, false, interpret(err)
	}
	// Insert unless the URI is taken; then lock and update the existing row.
	var id string
	err = tx.QueryRow(ctx, `INSERT INTO items (id, capsule_id, kind, uri, file_name, file_type, size, content_hash,
		metadata, time_added, time_authored, time_updated, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (capsule_id, uri) DO NOTHING RETURNING id`,
		it.ID, capID, string(it.Kind), it.URI, it.FileName, it.FileType, it.Size, it.ContentHash, meta,
		it.TimeAdded, it.TimeAuthored, it.TimeUpdated, string(domain.StatusQueued)).Scan(&id)
	created := err == nil
	queued := created
	if errors.Is(err, pgx.ErrNoRows) {
		var hash string
		if err = tx.QueryRow(ctx, "SELECT id, content_hash FROM items WHERE capsule_id = $1 AND uri = $2 FOR UPDATE",
			capID, it.URI).Scan(&id, &hash); err == nil {
			if hash == it.ContentHash {
				_, err = tx.Exec(ctx, `UPDATE items SET metadata = $1, time_authored = $2,
				time_updated = CASE WHEN metadata = $1::jsonb AND time_authored IS NOT DISTINCT FROM $2 THEN time_updated ELSE $3 END
				WHERE id = $4`, meta, it.TimeAuthored, it.TimeUpdated, id)
			} else {
				queued = true
				_, err = tx.Exec(ctx, `UPDATE items SET kind = $1, file_name = $2, file_type = $3, size = $4, content_hash = $5,
				metadata = $6, time_authored = $7, time_updated = $8, status = $9, error = NULL WHERE id = $10`,
					string(it.Kind), it.FileName, it.FileType, it.Size, it.ContentHash, meta, it.TimeAuthored,
					it.TimeUpdated, string(domain.StatusQueued), id)
			}
		}
	}
	if err == nil && !created {
		err = bump(ctx, tx, capID) // its metadata or times may have changed
	}
	if err != nil {
		return domain.Item{}, false, fmt.Errorf("put item: %w", interpret(err))
	}
	if queued {
		if err := s.db.jobs.EnqueueTx(ctx, tx, id, it.ContentHash); err != nil {
			return domain.Item{}, false, err
		}
	}
	out, err := scanItem(tx.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = $1", id))
	if err != nil {
		return domain.Item{}, false, err
	}
	return out, created, tx.Commit(ctx)
}

// GetItem returns an item of a capsule.
func (s *CapsuleStore) GetItem(ctx context.Context, capsule, id string) (domain.Item, error) {
	return scanItem(s.db.pool.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE c.name = $1 AND i.id = $2", capsule, id))
}

// ListItems lists a capsule's items newest first (ids are time-ordered),
// starting after the id after, optionally only those in one status. It fails
// with ErrNotFound when the capsule does not exist.
func (s *CapsuleStore) ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) ([]domain.Item, error) {
	var capID int64
	if err := s.db.pool.QueryRow(ctx, "SELECT id FROM capsules WHERE name = $1", capsule).Scan(&capID); err != nil {
		return nil, interpret(err)
	}
	rows, err := s.db.pool.Query(ctx, "SELECT "+itemColumns+itemFrom+` WHERE i.capsule_id = $1
		AND ($2 = '' OR i.status = $2) AND ($3 = '' OR i.id < $3) ORDER BY i.id DESC LIMIT $4`,
		capID, string(status), after, limit)
	if err != nil {
		return nil, fmt.Errorf("list items: %w", err)
	}
	return collect(rows, scanItem)
}

// DeleteItem deletes an item with its chunks and text in one transaction and
// returns it as it was.
func (s *CapsuleStore) DeleteItem(ctx context.Context, capsule, id string) (domain.Item, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	it, err := scanItem(tx.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE c.name = $1 AND i.id = $2 FOR UPDATE OF i", capsule, id))
	if err != nil {
		return domain.Item{}, err
	}
	var capID int64
	if err := tx.QueryRow(ctx, "DELETE FROM items WHERE id = $1 RETURNING capsule_id", id).Scan(&capID); err != nil { // chunks and text cascade
		return domain.Item{}, fmt.Errorf("delete item: %w", interpret(err))
	}
	if err := bump(ctx, tx, capID); err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit(ctx)
}

func deleteChunks(ctx context.Context, tx pgx.Tx, itemID string) error {
	for _, q := range []string{
		"DELETE FROM chunks WHERE item_id = $1",
		"DELETE FROM item_texts WHERE item_id = $1",
	} {
		if _, err := tx.Exec(ctx, q, itemID); err != nil {
			return fmt.Errorf("delete chunks: %w", interpret(err))
		}
	}
	return nil
}

// RequeueItem queues an item for ingestion again, with a new job in the
// same transaction.
func (s *CapsuleStore) RequeueItem(ctx context.Context, capsule, id string, at time.Time) (domain.Item, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var hash string
	err = tx.QueryRow(ctx, `UPDATE items SET status = $1, error = NULL, time_updated = $2
		WHERE id = $3 AND capsule_id = (SELECT id FROM capsules WHERE name = $4) RETURNING content_hash`,
		string(domain.StatusQueued), at, id, capsule).Scan(&hash)
	if err != nil {
		return domain.Item{}, fmt.Errorf("requeue item: %w", interpret(err))
	}
	if err := s.db.jobs.EnqueueTx(ctx, tx, id, hash); err != nil {
		return domain.Item{}, err
	}
	it, err := scanItem(tx.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = $1", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit(ctx)
}

// Generation returns the capsule's generation, which changes whenever its
// searchable items change (ErrNotFound: no such capsule).
func (s *CapsuleStore) Generation(ctx context.Context, capsule string) (int64, error) {
	var g int64
	err := s.db.pool.QueryRow(ctx, "SELECT generation FROM capsules WHERE name = $1", capsule).Scan(&g)
	return g, interpret(err)
}

// bump gives the capsule a new generation in tx.
func bump(ctx context.Context, tx pgx.Tx, capID int64) error {
	if _, err := tx.Exec(ctx, "UPDATE capsules SET generation = nextval('capsule_generations') WHERE id = $1", capID); err != nil {
		return fmt.Errorf("bump generation: %w", interpret(err))
	}
	return nil
}

// CompleteItem makes an item searchable all at once: in one transaction it
// replaces the item's chunks and text with the new ones and marks it ready.
// It fails with ErrConflict, writing nothing, when the item is no longer
// indexing the content hash (it was updated, requeued or deleted meanwhile).
func (s *CapsuleStore) CompleteItem(ctx context.Context, id, hash, text string, chunks []domain.Chunk, at time.Time) (domain.Item, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var capID int64
	err = tx.QueryRow(ctx, "SELECT capsule_id FROM items WHERE id = $1 AND content_hash = $2 AND status = $3 FOR UPDATE",
		id, hash, string(domain.StatusIndexing)).Scan(&capID)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Item{}, fmt.Errorf("complete item %s: %w", id, domain.ErrConflict)
	} else if err != nil {
		return domain.Item{}, err
	}
	if err := deleteChunks(ctx, tx, id); err != nil {
		return domain.Item{}, err
	}
	rows := make([][]any, len(chunks))
	for i, c := range chunks {
		var vec *pgvector.Vector
		if c.Vector != nil {
			v := pgvector.NewVector(c.Vector)
			vec = &v
		}
		rows[i] = []any{id, capID, c.Idx, c.Text, c.Start, c.End, c.Tokens, vec}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chunks"},
		[]string{"item_id", "capsule_id", "idx", "text", "start_off", "end_off", "tokens", "embedding"},
		pgx.CopyFromRows(rows)); err != nil {
		return domain.Item{}, fmt.Errorf("insert chunks: %w", interpret(err))
	}
	if _, err := tx.Exec(ctx, "INSERT INTO item_texts (item_id, text) VALUES ($1, $2)", id, text); err != nil {
		return domain.Item{}, fmt.Errorf("store text: %w", interpret(err))
	}
	if _, err := tx.Exec(ctx, `UPDATE items SET status = $1, error = NULL, chunk_count = $2, indexed_hash = content_hash,
		time_updated = $3 WHERE id = $4`, string(domain.StatusReady), len(chunks), at, id); err != nil {
		return domain.Item{}, interpret(err)
	}
	if err := bump(ctx, tx, capID); err != nil {
		return domain.Item{}, err
	}
	it, err := scanItem(tx.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = $1", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit(ctx)
}

// FailItem marks an item failed with a reason and removes whatever chunks it
// had, in one transaction; ErrConflict when the item is no longer indexing
// the content hash.
func (s *CapsuleStore) FailItem(ctx context.Context, id, hash, reason string, at time.Time) (domain.Item, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	var capID int64
	err = tx.QueryRow(ctx, `UPDATE items SET status = $1, error = $2, chunk_count = 0, indexed_hash = NULL, time_updated = $3
		WHERE id = $4 AND content_hash = $5 AND status = $6 RETURNING capsule_id`,
		string(domain.StatusFailed), reason, at, id, hash, string(domain.StatusIndexing)).Scan(&capID)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Item{}, fmt.Errorf("fail item %s: %w", id, domain.ErrConflict)
	} else if err != nil {
		return domain.Item{}, interpret(err)
	}
	if err := bump(ctx, tx, capID); err != nil {
		return domain.Item{}, err
	}
	if err := deleteChunks(ctx, tx, id); err != nil {
		return domain.Item{}, err
	}
	it, err := scanItem(tx.QueryRow(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = $1", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit(ctx)
}

// ItemText returns the extracted text of a capsule's item; ErrConflict when
// the item has none yet.
func (s *CapsuleStore) ItemText(ctx context.Context, capsule, id string) (string, error) {
	var text *string
	err := s.db.pool.QueryRow(ctx, `SELECT t.text FROM items i JOIN capsules c ON c.id = i.capsule_id
		LEFT JOIN item_texts t ON t.item_id = i.id WHERE c.name = $1 AND i.id = $2`, capsule, id).Scan(&text)
	if err != nil {
		return "", interpret(err)
	}
	if text == nil {
		return "", fmt.Errorf("item %s has no text yet: %w", id, domain.ErrConflict)
	}
	return *text, nil
}

// HashInUse reports whether any item holds the content hash.
func (s *CapsuleStore) HashInUse(ctx context.Context, hash string) (bool, error) {
	var used bool
	err := s.db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM items WHERE content_hash = $1)", hash).Scan(&used)
	return used, interpret(err)
}

// CachedVectors returns the cached embeddings of the given text hashes under
// a model; missing ones are absent from the map.
func (s *CapsuleStore) CachedVectors(ctx context.Context, model string, hashes [][32]byte) (map[[32]byte][]float32, error) {
	out := make(map[[32]byte][]float32, len(hashes))
	keys := make([][]byte, len(hashes))
	for i := range hashes {
		keys[i] = hashes[i][:]
	}
	rows, err := s.db.pool.Query(ctx, "SELECT hash, vector FROM embedding_cache WHERE model = $1 AND hash = ANY($2)", model, keys)
	if err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h []byte
		var v pgvector.Vector
		if err := rows.Scan(&h, &v); err != nil {
			return nil, err
		}
		var k [32]byte
		copy(k[:], h)
		out[k] = v.Slice()
	}
	return out, rows.Err()
}

// CacheVectors stores embeddings by model and text hash.
func (s *CapsuleStore) CacheVectors(ctx context.Context, model string, vecs map[[32]byte][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for h, v := range vecs {
		b.Queue(`INSERT INTO embedding_cache (model, hash, vector) VALUES ($1, $2, $3)
			ON CONFLICT (model, hash) DO UPDATE SET vector = excluded.vector`, model, h[:], pgvector.NewVector(v))
	}
	if err := s.db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("cache vectors: %w", interpret(err))
	}
	return nil
}

package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// CapsuleStore implements the capsule service's store and the retrieval
// source on the database.
type CapsuleStore struct {
	db    *DB
	lease time.Duration // job rescue; 0: the store belongs to one process
}

// WithLease returns the store for a database that several processes share:
// an ingestion job that has run longer than the lease is presumed dead (its
// process stopped) and run again by any process (river's
// RescueStuckJobsAfter). Set it longer than the ingestion of one item may
// take (a live job run twice only costs duplicate work: completion is
// guarded by the item's status and content hash). Without a lease the
// database belongs to one process, and the jobs a stopped process left
// running are run again when ingestion starts.
func (s *CapsuleStore) WithLease(lease time.Duration) *CapsuleStore {
	c := *s
	c.lease = lease
	return &c
}

// Capsules returns the capsule, item and chunk store.
func (db *DB) Capsules() *CapsuleStore { return &CapsuleStore{db: db} }

// CreateCapsule stores a new capsule (ErrConflict when the name is taken).
func (s *CapsuleStore) CreateCapsule(ctx context.Context, c domain.Capsule) error {
	_, err := s.db.write.ExecContext(ctx, "INSERT INTO capsules (name, description, created_at) VALUES (?, ?, ?)",
		c.Name, c.Description, millis(c.CreatedAt))
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
	return scanCapsule(s.db.read.QueryRowContext(ctx, capsuleQuery+" WHERE c.name = ?", name))
}

// HasCapsule reports whether the capsule exists.
func (s *CapsuleStore) HasCapsule(ctx context.Context, name string) (bool, error) {
	var ok bool
	if err := s.db.read.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM capsules WHERE name = ?)", name).Scan(&ok); err != nil {
		return false, fmt.Errorf("has capsule: %w", err)
	}
	return ok, nil
}

// ListCapsules lists every capsule by name.
func (s *CapsuleStore) ListCapsules(ctx context.Context) ([]domain.Capsule, error) {
	rows, err := s.db.read.QueryContext(ctx, capsuleQuery+" ORDER BY c.name")
	if err != nil {
		return nil, fmt.Errorf("list capsules: %w", err)
	}
	return collect(rows, scanCapsule)
}

func scanCapsule(r scanner) (domain.Capsule, error) {
	var c domain.Capsule
	var created int64
	if err := r.Scan(&c.Name, &c.Description, &created, &c.ItemCount, &c.ChunkCount); err != nil {
		return domain.Capsule{}, interpret(err)
	}
	c.CreatedAt = fromMillis(created)
	return c, nil
}

// DeleteCapsule deletes a capsule with its items, chunks, BM25 rows and
// texts in one transaction, and returns the content hashes its items held.
func (s *CapsuleStore) DeleteCapsule(ctx context.Context, name string) ([]string, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM capsules WHERE name = ?", name).Scan(&id); err != nil {
		return nil, interpret(err)
	}
	hashes, err := queryStrings(ctx, tx, "SELECT DISTINCT content_hash FROM items WHERE capsule_id = ?", id)
	if err != nil {
		return nil, err
	}
	for _, q := range []string{
		"DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE capsule_id = ?)",
		"DELETE FROM chunks WHERE capsule_id = ?",
		"DELETE FROM capsules WHERE id = ?", // items and texts cascade
	} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return nil, fmt.Errorf("delete capsule: %w", interpret(err))
		}
	}
	return hashes, s.db.kw.commitDrop(tx, id)
}

func queryStrings(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

const itemColumns = `i.id, c.name, i.kind, i.uri, i.file_name, i.file_type, i.size, i.content_hash, i.metadata,
	i.time_added, i.time_authored, i.time_updated, i.status, i.error, i.chunk_count`

const itemFrom = " FROM items i JOIN capsules c ON c.id = i.capsule_id"

func scanItem(r scanner) (domain.Item, error) {
	var it domain.Item
	var kind, status, meta string
	var added, updated int64
	var authored sql.NullInt64
	var errText sql.NullString
	if err := r.Scan(&it.ID, &it.Capsule, &kind, &it.URI, &it.FileName, &it.FileType, &it.Size, &it.ContentHash, &meta,
		&added, &authored, &updated, &status, &errText, &it.ChunkCount); err != nil {
		return domain.Item{}, interpret(err)
	}
	it.Kind, it.Status, it.Error = domain.ItemKind(kind), domain.ItemStatus(status), errText.String
	it.TimeAdded, it.TimeAuthored, it.TimeUpdated = fromMillis(added), fromNullMillis(authored), fromMillis(updated)
	if err := json.Unmarshal([]byte(meta), &it.Metadata); err != nil {
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
// it is created. A new or changed item gets its ingestion job in the same
// transaction; an unchanged one none.
func (s *CapsuleStore) PutItem(ctx context.Context, it domain.Item) (domain.Item, bool, error) {
	meta, err := marshalMeta(it.Metadata)
	if err != nil {
		return domain.Item{}, false, err
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, false, err
	}
	defer tx.Rollback()
	var capID int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM capsules WHERE name = ?", it.Capsule).Scan(&capID); err != nil {
		return domain.Item{}, false, interpret(err)
	}
	var id, hash string
	err = tx.QueryRowContext(ctx, "SELECT id, content_hash FROM items WHERE capsule_id = ? AND uri = ?", capID, it.URI).Scan(&id, &hash)
	created := false
	switch {
	case errors.Is(err, sql.ErrNoRows):
		created = true
		id = it.ID
		_, err = tx.ExecContext(ctx, `INSERT INTO items (id, capsule_id, kind, uri, file_name, file_type, size, content_hash,
			metadata, time_added, time_authored, time_updated, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			it.ID, capID, string(it.Kind), it.URI, it.FileName, it.FileType, it.Size, it.ContentHash, meta,
			millis(it.TimeAdded), nullMillis(it.TimeAuthored), millis(it.TimeUpdated), string(domain.StatusQueued))
	case err != nil:
	case hash == it.ContentHash:
		_, err = tx.ExecContext(ctx, `UPDATE items SET metadata = ?, time_authored = ?,
			time_updated = CASE WHEN metadata = ? AND time_authored IS ? THEN time_updated ELSE ? END WHERE id = ?`,
			meta, nullMillis(it.TimeAuthored), meta, nullMillis(it.TimeAuthored), millis(it.TimeUpdated), id)
	default:
		_, err = tx.ExecContext(ctx, `UPDATE items SET kind = ?, file_name = ?, file_type = ?, size = ?, content_hash = ?,
			metadata = ?, time_authored = ?, time_updated = ?, status = ?, error = NULL WHERE id = ?`,
			string(it.Kind), it.FileName, it.FileType, it.Size, it.ContentHash, meta, nullMillis(it.TimeAuthored),
			millis(it.TimeUpdated), string(domain.StatusQueued), id)
	}
	if err != nil {
		return domain.Item{}, false, fmt.Errorf("put item: %w", interpret(err))
	}
	if created || hash != it.ContentHash {
		if err := s.db.jobs.EnqueueTx(ctx, tx, id, it.ContentHash); err != nil {
			return domain.Item{}, false, err
		}
	}
	out, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = ?", id))
	if err != nil {
		return domain.Item{}, false, err
	}
	return out, created, tx.Commit()
}

// GetItem returns an item of a capsule.
func (s *CapsuleStore) GetItem(ctx context.Context, capsule, id string) (domain.Item, error) {
	return scanItem(s.db.read.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE c.name = ? AND i.id = ?", capsule, id))
}

// ListItems lists a capsule's items newest first (ids are time-ordered),
// starting after the id after, optionally only those in one status. It fails
// with ErrNotFound when the capsule does not exist.
func (s *CapsuleStore) ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) ([]domain.Item, error) {
	var capID int64
	if err := s.db.read.QueryRowContext(ctx, "SELECT id FROM capsules WHERE name = ?", capsule).Scan(&capID); err != nil {
		return nil, interpret(err)
	}
	q := "SELECT " + itemColumns + itemFrom + " WHERE i.capsule_id = ?"
	args := []any{capID}
	if status != "" {
		q += " AND i.status = ?"
		args = append(args, string(status))
	}
	if after != "" {
		q += " AND i.id < ?"
		args = append(args, after)
	}
	q += " ORDER BY i.id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list items: %w", err)
	}
	return collect(rows, scanItem)
}

// DeleteItem deletes an item with its chunks, BM25 rows and text in one
// transaction and returns it as it was.
func (s *CapsuleStore) DeleteItem(ctx context.Context, capsule, id string) (domain.Item, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback()
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE c.name = ? AND i.id = ?", capsule, id))
	if err != nil {
		return domain.Item{}, err
	}
	capID, ch, err := s.kwRemoval(ctx, tx, id)
	if err != nil {
		return domain.Item{}, err
	}
	if err := deleteChunks(ctx, tx, id); err != nil {
		return domain.Item{}, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM items WHERE id = ?", id); err != nil {
		return domain.Item{}, fmt.Errorf("delete item: %w", interpret(err))
	}
	return it, s.db.kw.commit(tx, capID, ch)
}

// kwRemoval starts the record of a write that replaces or removes item
// itemID's chunks: its capsule, and, when the capsule has a keyword index,
// the change with the rowids of the chunks it has now (kwIndexes.commit).
func (s *CapsuleStore) kwRemoval(ctx context.Context, tx *sql.Tx, itemID string) (int64, *kwChange, error) {
	var capID int64
	if err := tx.QueryRowContext(ctx, "SELECT capsule_id FROM items WHERE id = ?", itemID).Scan(&capID); err != nil {
		return 0, nil, interpret(err)
	}
	if !s.db.kw.tracked(capID) {
		return capID, nil, nil
	}
	ch := &kwChange{capID: capID, item: itemID}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM chunks WHERE item_id = ?", itemID)
	if err != nil {
		return 0, nil, interpret(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			return 0, nil, err
		}
		ch.removed = append(ch.removed, r)
	}
	return capID, ch, rows.Err()
}

func deleteChunks(ctx context.Context, tx *sql.Tx, itemID string) error {
	for _, q := range []string{
		"DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE item_id = ?)",
		"DELETE FROM chunks WHERE item_id = ?",
		"DELETE FROM item_texts WHERE item_id = ?",
	} {
		if _, err := tx.ExecContext(ctx, q, itemID); err != nil {
			return fmt.Errorf("delete chunks: %w", interpret(err))
		}
	}
	return nil
}

// RequeueItem queues an item for ingestion again, with a new job in the
// same transaction.
func (s *CapsuleStore) RequeueItem(ctx context.Context, capsule, id string, at time.Time) (domain.Item, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback()
	var hash string
	err = tx.QueryRowContext(ctx, `UPDATE items SET status = ?, error = NULL, time_updated = ?
		WHERE id = ? AND capsule_id = (SELECT id FROM capsules WHERE name = ?) RETURNING content_hash`,
		string(domain.StatusQueued), millis(at), id, capsule).Scan(&hash)
	if err != nil {
		return domain.Item{}, fmt.Errorf("requeue item: %w", interpret(err))
	}
	if err := s.db.jobs.EnqueueTx(ctx, tx, id, hash); err != nil {
		return domain.Item{}, err
	}
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = ?", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, tx.Commit()
}

// CompleteItem makes an item searchable all at once: in one transaction it
// replaces the item's chunks, BM25 rows and text with the new ones and marks
// it ready. It fails with ErrConflict, writing nothing, when the item is no
// longer indexing the content hash (it was updated, requeued or deleted
// meanwhile).
func (s *CapsuleStore) CompleteItem(ctx context.Context, id, hash, text string, chunks []domain.Chunk, at time.Time) (domain.Item, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback()
	var capID int64
	err = tx.QueryRowContext(ctx, "SELECT capsule_id FROM items WHERE id = ? AND content_hash = ? AND status = ?",
		id, hash, string(domain.StatusIndexing)).Scan(&capID)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Item{}, fmt.Errorf("complete item %s: %w", id, domain.ErrConflict)
	} else if err != nil {
		return domain.Item{}, err
	}
	_, ch, err := s.kwRemoval(ctx, tx, id)
	if err != nil {
		return domain.Item{}, err
	}
	if err := deleteChunks(ctx, tx, id); err != nil {
		return domain.Item{}, err
	}
	insChunk, err := tx.PrepareContext(ctx, `INSERT INTO chunks (item_id, capsule_id, idx, text, start_off, end_off, tokens, vector)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return domain.Item{}, err
	}
	defer insChunk.Close()
	insFTS, err := tx.PrepareContext(ctx, "INSERT INTO chunks_fts (rowid, body, cap) VALUES (?, ?, ?)")
	if err != nil {
		return domain.Item{}, err
	}
	defer insFTS.Close()
	capTok := capToken(capID)
	var rowids []int64
	for _, c := range chunks {
		var vec []byte
		if c.Vector != nil {
			vec = EncodeVector(c.Vector)
		}
		res, err := insChunk.ExecContext(ctx, id, capID, c.Idx, c.Text, c.Start, c.End, c.Tokens, vec)
		if err != nil {
			return domain.Item{}, fmt.Errorf("insert chunk %d: %w", c.Idx, interpret(err))
		}
		rowid, _ := res.LastInsertId()
		if _, err := insFTS.ExecContext(ctx, rowid, c.Text, capTok); err != nil {
			return domain.Item{}, fmt.Errorf("index chunk %d: %w", c.Idx, interpret(err))
		}
		rowids = append(rowids, rowid)
	}
	if ch != nil {
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Text
		}
		if ch.added, err = s.db.kw.tok.docs(ctx, texts, capTok); err != nil {
			return domain.Item{}, err
		}
		for i := range ch.added {
			ch.added[i].rowid = rowids[i]
			ch.added[i].idx = uint32(chunks[i].Idx)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO item_texts (item_id, text) VALUES (?, ?)", id, text); err != nil {
		return domain.Item{}, fmt.Errorf("store text: %w", interpret(err))
	}
	count, crc := chunkSum(chunks)
	if _, err := tx.ExecContext(ctx, `UPDATE items SET status = ?, error = NULL, chunk_count = ?, indexed_hash = content_hash,
		time_updated = ?, vec_count = ?, vec_crc = ? WHERE id = ?`, string(domain.StatusReady), len(chunks), millis(at), count, crc, id); err != nil {
		return domain.Item{}, interpret(err)
	}
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = ?", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, s.db.kw.commit(tx, capID, ch)
}

// FailItem marks an item failed with a reason and removes whatever chunks it
// had, in one transaction; ErrConflict when the item is no longer indexing
// the content hash.
func (s *CapsuleStore) FailItem(ctx context.Context, id, hash, reason string, at time.Time) (domain.Item, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.Item{}, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE items SET status = ?, error = ?, chunk_count = 0, indexed_hash = NULL, time_updated = ?
		WHERE id = ? AND content_hash = ? AND status = ?`,
		string(domain.StatusFailed), reason, millis(at), id, hash, string(domain.StatusIndexing))
	if err != nil {
		return domain.Item{}, interpret(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.Item{}, fmt.Errorf("fail item %s: %w", id, domain.ErrConflict)
	}
	capID, ch, err := s.kwRemoval(ctx, tx, id)
	if err != nil {
		return domain.Item{}, err
	}
	if err := deleteChunks(ctx, tx, id); err != nil {
		return domain.Item{}, err
	}
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemColumns+itemFrom+" WHERE i.id = ?", id))
	if err != nil {
		return domain.Item{}, err
	}
	return it, s.db.kw.commit(tx, capID, ch)
}

// ItemText returns the extracted text of a capsule's item; ErrConflict when
// the item has none yet.
func (s *CapsuleStore) ItemText(ctx context.Context, capsule, id string) (string, error) {
	var text sql.NullString
	err := s.db.read.QueryRowContext(ctx, `SELECT t.text FROM items i JOIN capsules c ON c.id = i.capsule_id
		LEFT JOIN item_texts t ON t.item_id = i.id WHERE c.name = ? AND i.id = ?`, capsule, id).Scan(&text)
	if err != nil {
		return "", interpret(err)
	}
	if !text.Valid {
		return "", fmt.Errorf("item %s has no text yet: %w", id, domain.ErrConflict)
	}
	return text.String, nil
}

// HashInUse reports whether any item holds the content hash.
func (s *CapsuleStore) HashInUse(ctx context.Context, hash string) (bool, error) {
	var n int
	err := s.db.write.QueryRowContext(ctx, "SELECT count(*) FROM items WHERE content_hash = ?", hash).Scan(&n)
	return n > 0, interpret(err)
}

// CachedVectors returns the cached embeddings of the given text hashes under
// a model; missing ones are absent from the map.
func (s *CapsuleStore) CachedVectors(ctx context.Context, model string, hashes [][32]byte) (map[[32]byte][]float32, error) {
	out := make(map[[32]byte][]float32, len(hashes))
	for start := 0; start < len(hashes); start += 500 {
		part := hashes[start:min(start+500, len(hashes))]
		args := make([]any, 0, len(part)+1)
		args = append(args, model)
		for _, h := range part {
			args = append(args, h[:])
		}
		rows, err := s.db.read.QueryContext(ctx, "SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN (?"+
			strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return nil, fmt.Errorf("embedding cache: %w", err)
		}
		for rows.Next() {
			var h, v []byte
			if err := rows.Scan(&h, &v); err != nil {
				rows.Close()
				return nil, err
			}
			var k [32]byte
			copy(k[:], h)
			out[k] = DecodeVector(v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CacheVectors stores embeddings by model and text hash.
func (s *CapsuleStore) CacheVectors(ctx context.Context, model string, vecs map[[32]byte][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, "INSERT OR REPLACE INTO embedding_cache (model, hash, vector) VALUES (?, ?, ?)")
	if err != nil {
		return err
	}
	defer st.Close()
	for h, v := range vecs {
		if _, err := st.ExecContext(ctx, model, h[:], EncodeVector(v)); err != nil {
			return fmt.Errorf("cache vector: %w", interpret(err))
		}
	}
	return tx.Commit()
}

// EncodeVector is the stored form of a vector: little-endian float32.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads a stored vector.
func DecodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

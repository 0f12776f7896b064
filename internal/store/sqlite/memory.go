package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/terms"
)

// MemoryStore implements memory.Store on the database.
type MemoryStore struct{ db *DB }

// Memory returns the memory store.
func (db *DB) Memory() *MemoryStore { return &MemoryStore{db: db} }

const memoryColumns = "id, namespace, kind, role, content, conversation, metadata, created_at, updated_at, valid_from, invalid_from, superseded_by, expires_at"

// StoredTurnKeys returns which of keys the namespace's conversation holds
// (see memory.Store), in statements of at most 500 keys.
func (s *MemoryStore) StoredTurnKeys(ctx context.Context, ns, conversation string, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	for start := 0; start < len(keys); start += 500 {
		group := keys[start:min(start+500, len(keys))]
		args := []any{ns, memNullString(conversation)}
		for _, k := range group {
			args = append(args, k)
		}
		rows, err := s.db.read.QueryContext(ctx, "SELECT dedupe_key FROM memories WHERE namespace = ? AND conversation IS ? AND dedupe_key IN (?"+
			strings.Repeat(", ?", len(group)-1)+")", args...)
		if err != nil {
			return nil, fmt.Errorf("stored turn keys: %w", interpret(err))
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, fmt.Errorf("stored turn keys: %w", interpret(err))
			}
			out[k] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("stored turn keys: %w", interpret(err))
		}
	}
	return out, nil
}

// InsertMemories stores recs in one transaction (see memory.Store).
func (s *MemoryStore) InsertMemories(ctx context.Context, recs []domain.MemoryRecord) ([]domain.StoredMemory, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("insert memories: %w", interpret(err))
	}
	defer tx.Rollback()
	out := make([]domain.StoredMemory, 0, len(recs))
	for i, rec := range recs {
		m := rec.Memory
		if rec.DedupeKey != "" {
			var id string
			err := tx.QueryRowContext(ctx, "SELECT id FROM memories WHERE namespace = ? AND conversation IS ? AND dedupe_key = ?",
				m.Namespace, memNullString(m.Conversation), rec.DedupeKey).Scan(&id)
			if err == nil {
				out = append(out, domain.StoredMemory{ID: id})
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("insert memory %d: %w", i, interpret(err))
			}
		}
		var owner string
		err := tx.QueryRowContext(ctx, "SELECT namespace FROM memories WHERE id = ?", m.ID).Scan(&owner)
		switch {
		case err == nil && owner == m.Namespace:
			out = append(out, domain.StoredMemory{ID: m.ID})
			continue
		case err == nil:
			return nil, fmt.Errorf("insert memory %s: %w: the id belongs to another namespace", m.ID, domain.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("insert memory %d: %w", i, interpret(err))
		}
		meta, err := memMarshalMeta(m.Metadata)
		if err != nil {
			return nil, err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO memories (id, namespace, kind, role, content, search_text, conversation, dedupe_key,
			metadata, created_at, updated_at, valid_from, invalid_from, superseded_by, expires_at, vector, vector_model)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.Namespace, string(m.Kind), memNullString(m.Role), m.Content, memSearchText(rec), memNullString(m.Conversation),
			memNullString(rec.DedupeKey), meta, millis(m.CreatedAt), millis(m.UpdatedAt), millis(m.ValidFrom),
			nullMillis(m.InvalidFrom), memNullString(m.SupersededBy), nullMillis(m.ExpiresAt), memEncodeVector(rec.Vector), memNullString(rec.VectorModel))
		if err != nil {
			return nil, fmt.Errorf("insert memory %s: %w", m.ID, interpret(err))
		}
		out = append(out, domain.StoredMemory{ID: m.ID, Created: true})
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("insert memories: %w", interpret(err))
	}
	return out, nil
}

// GetMemory returns one memory of the namespace.
func (s *MemoryStore) GetMemory(ctx context.Context, ns, id string) (domain.Memory, error) {
	return scanMemory(s.db.read.QueryRowContext(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = ? AND id = ?", ns, id))
}

// GetMemories returns the memories with the given ids, in their order.
func (s *MemoryStore) GetMemories(ctx context.Context, ns string, ids []string) ([]domain.Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{ns}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.read.QueryContext(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = ? AND id IN ("+memPlaceholders(len(ids))+")", args...)
	if err != nil {
		return nil, fmt.Errorf("get memories: %w", interpret(err))
	}
	byID, err := collect(rows, scanMemoryRow)
	if err != nil {
		return nil, err
	}
	index := make(map[string]domain.Memory, len(byID))
	for _, m := range byID {
		index[m.ID] = m
	}
	out := make([]domain.Memory, 0, len(byID))
	for _, id := range ids {
		if m, ok := index[id]; ok {
			out = append(out, m)
			delete(index, id)
		}
	}
	return out, nil
}

// UpdateMemory replaces a memory's mutable fields.
func (s *MemoryStore) UpdateMemory(ctx context.Context, rec domain.MemoryRecord) error {
	m := rec.Memory
	meta, err := memMarshalMeta(m.Metadata)
	if err != nil {
		return err
	}
	res, err := s.db.write.ExecContext(ctx, `UPDATE memories SET content = ?, search_text = ?, metadata = ?, updated_at = ?, valid_from = ?,
		invalid_from = ?, superseded_by = ?, expires_at = ?, vector = ?, vector_model = ? WHERE namespace = ? AND id = ?`,
		m.Content, memSearchText(rec), meta, millis(m.UpdatedAt), millis(m.ValidFrom), nullMillis(m.InvalidFrom),
		memNullString(m.SupersededBy), nullMillis(m.ExpiresAt), memEncodeVector(rec.Vector), memNullString(rec.VectorModel), m.Namespace, m.ID)
	if err != nil {
		return fmt.Errorf("update memory %s: %w", m.ID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// Supersede marks old as invalid from at, superseded by newID.
func (s *MemoryStore) Supersede(ctx context.Context, ns, oldID, newID string, at time.Time) error {
	res, err := s.db.write.ExecContext(ctx, `UPDATE memories SET invalid_from = ?, superseded_by = ?, updated_at = ?
		WHERE namespace = ? AND id = ? AND invalid_from IS NULL`, millis(at), newID, millis(at), ns, oldID)
	if err != nil {
		return fmt.Errorf("supersede memory %s: %w", oldID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// DeleteMemory deletes one memory.
func (s *MemoryStore) DeleteMemory(ctx context.Context, ns, id string) error {
	res, err := s.db.write.ExecContext(ctx, "DELETE FROM memories WHERE namespace = ? AND id = ?", ns, id)
	if err != nil {
		return fmt.Errorf("delete memory %s: %w", id, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// memLiveSQL is the condition of live memories; its arguments come from memLiveArgs.
const memLiveSQL = "(? OR expires_at IS NULL OR expires_at > ?) AND (? OR invalid_from IS NULL)"

func memLiveArgs(f domain.LiveFilter) []any {
	return []any{f.IncludeExpired, millis(f.Now), f.IncludeSuperseded}
}

// ListMemories pages through a namespace's memories, newest first.
func (s *MemoryStore) ListMemories(ctx context.Context, ns string, f domain.MemoryListFilter) ([]domain.Memory, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	q := "SELECT " + memoryColumns + ", seq FROM memories WHERE namespace = ? AND " + memLiveSQL
	args := append([]any{ns}, memLiveArgs(f.LiveFilter)...)
	if f.Kind != "" {
		q += " AND kind = ?"
		args = append(args, string(f.Kind))
	}
	if f.Conversation != "" {
		q += " AND conversation = ?"
		args = append(args, f.Conversation)
	}
	if f.Cursor != "" {
		at, seq, err := memParseCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += " AND (created_at, seq) < (?, ?)"
		args = append(args, at, seq)
	}
	q += " ORDER BY created_at DESC, seq DESC LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list memories: %w", interpret(err))
	}
	defer rows.Close()
	var out []domain.Memory
	var seqs []int64
	for rows.Next() {
		var seq int64
		m, err := scanMemoryWith(rows, &seq)
		if err != nil {
			return nil, "", err
		}
		out = append(out, m)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list memories: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = strconv.FormatInt(millis(last.CreatedAt), 10) + "." + strconv.FormatInt(seqs[limit-1], 10)
	}
	return out, next, nil
}

func memParseCursor(c string) (int64, int64, error) {
	a, b, ok := strings.Cut(c, ".")
	at, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, domain.Invalid("cursor", "cursor %q is not one this server gave", c)
	}
	return at, seq, nil
}

// SearchText ranks memories by BM25 against the words of query.
func (s *MemoryStore) SearchText(ctx context.Context, ns, query string, limit int, f domain.LiveFilter) ([]domain.MemoryHit, error) {
	match := memFTSQuery(query)
	if match == "" || limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.read.QueryContext(ctx, `SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts
		JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ? AND m.namespace = ? AND `+memLiveSQL+`
		ORDER BY rank LIMIT ?`, append(append([]any{match, ns}, memLiveArgs(f)...), limit)...)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", interpret(err))
	}
	defer rows.Close()
	var out []domain.MemoryHit
	for rows.Next() {
		var h domain.MemoryHit
		if err := rows.Scan(&h.ID, &h.Score); err != nil {
			return nil, fmt.Errorf("search memories: %w", err)
		}
		h.Score = -h.Score // bm25() is lower-is-better
		out = append(out, h)
	}
	return out, rows.Err()
}

// memFTSQuery turns free text into an FTS5 query: its memory search terms
// (terms.Memory), quoted, joined by OR. It never passes FTS5 syntax through.
func memFTSQuery(text string) string {
	ts := terms.Memory(text)
	for i, w := range ts {
		ts[i] = `"` + w + `"`
	}
	return strings.Join(ts, " OR ")
}

// Vectors returns the namespace's vectors of one embedding model.
func (s *MemoryStore) Vectors(ctx context.Context, ns, model string, f domain.LiveFilter) ([]domain.MemoryVector, error) {
	rows, err := s.db.read.QueryContext(ctx, "SELECT id, vector FROM memories WHERE namespace = ? AND vector_model = ? AND vector IS NOT NULL AND "+memLiveSQL,
		append([]any{ns, model}, memLiveArgs(f)...)...)
	if err != nil {
		return nil, fmt.Errorf("memory vectors: %w", interpret(err))
	}
	defer rows.Close()
	var out []domain.MemoryVector
	for rows.Next() {
		var v domain.MemoryVector
		var raw []byte
		if err := rows.Scan(&v.ID, &raw); err != nil {
			return nil, fmt.Errorf("memory vectors: %w", err)
		}
		v.Vec = DecodeVector(raw)
		out = append(out, v)
	}
	return out, rows.Err()
}

// Recent returns the namespace's newest memories.
func (s *MemoryStore) Recent(ctx context.Context, ns string, kind domain.MemoryKind, limit int, f domain.LiveFilter) ([]domain.Memory, error) {
	q := "SELECT " + memoryColumns + " FROM memories WHERE namespace = ? AND " + memLiveSQL
	args := append([]any{ns}, memLiveArgs(f)...)
	if kind != "" {
		q += " AND kind = ?"
		args = append(args, string(kind))
	}
	rows, err := s.db.read.QueryContext(ctx, q+" ORDER BY valid_from DESC, seq DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("recent memories: %w", interpret(err))
	}
	return collect(rows, scanMemoryRow)
}

// Owners returns the namespace of each stored id.
func (s *MemoryStore) Owners(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for start := 0; start < len(ids); start += 500 {
		part := ids[start:min(start+500, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := s.db.read.QueryContext(ctx, "SELECT id, namespace FROM memories WHERE id IN ("+memPlaceholders(len(part))+")", args...)
		if err != nil {
			return nil, fmt.Errorf("memory owners: %w", interpret(err))
		}
		for rows.Next() {
			var id, ns string
			if err := rows.Scan(&id, &ns); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = ns
		}
		rows.Close()
	}
	return out, nil
}

const memNamespaceStatsSQL = `SELECT namespace,
	sum(CASE WHEN (expires_at IS NULL OR expires_at > ?) AND invalid_from IS NULL THEN 1 ELSE 0 END),
	sum(kind = 'turn'), sum(kind = 'fact'), sum(kind = 'note'), min(created_at), max(updated_at)
	FROM memories`

// Namespaces lists the namespaces that hold memories or failures, by name.
func (s *MemoryStore) Namespaces(ctx context.Context, now time.Time) ([]domain.NamespaceStats, error) {
	rows, err := s.db.read.QueryContext(ctx, memNamespaceStatsSQL+" GROUP BY namespace ORDER BY namespace", millis(now))
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", interpret(err))
	}
	stats := map[string]*domain.NamespaceStats{}
	var names []string
	for rows.Next() {
		st, err := memScanStats(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		stats[st.Name] = &st
		names = append(names, st.Name)
	}
	rows.Close()
	if err := s.addFailures(ctx, stats, &names, ""); err != nil {
		return nil, err
	}
	memSortStrings(names)
	out := make([]domain.NamespaceStats, 0, len(names))
	for _, n := range names {
		out = append(out, *stats[n])
	}
	return out, nil
}

// Namespace returns one namespace's counts.
func (s *MemoryStore) Namespace(ctx context.Context, ns string, now time.Time) (domain.NamespaceStats, error) {
	rows, err := s.db.read.QueryContext(ctx, memNamespaceStatsSQL+" WHERE namespace = ? GROUP BY namespace", millis(now), ns)
	if err != nil {
		return domain.NamespaceStats{}, fmt.Errorf("namespace: %w", interpret(err))
	}
	stats := map[string]*domain.NamespaceStats{}
	var names []string
	for rows.Next() {
		st, err := memScanStats(rows)
		if err != nil {
			rows.Close()
			return domain.NamespaceStats{}, err
		}
		stats[st.Name] = &st
		names = append(names, st.Name)
	}
	rows.Close()
	if err := s.addFailures(ctx, stats, &names, ns); err != nil {
		return domain.NamespaceStats{}, err
	}
	st, ok := stats[ns]
	if !ok {
		return domain.NamespaceStats{}, domain.ErrNotFound
	}
	return *st, nil
}

func (s *MemoryStore) addFailures(ctx context.Context, stats map[string]*domain.NamespaceStats, names *[]string, only string) error {
	q := "SELECT namespace, count(*), min(created_at), max(created_at) FROM memory_failures"
	var args []any
	if only != "" {
		q += " WHERE namespace = ?"
		args = append(args, only)
	}
	rows, err := s.db.read.QueryContext(ctx, q+" GROUP BY namespace", args...)
	if err != nil {
		return fmt.Errorf("count failures: %w", interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		var ns string
		var n int
		var first, last int64
		if err := rows.Scan(&ns, &n, &first, &last); err != nil {
			return err
		}
		st, ok := stats[ns]
		if !ok {
			st = &domain.NamespaceStats{Namespace: domain.Namespace{Name: ns, CreatedAt: fromMillis(first), UpdatedAt: fromMillis(last)}}
			stats[ns] = st
			*names = append(*names, ns)
		}
		st.Failures = n
		if t := fromMillis(last); t.After(st.UpdatedAt) {
			st.UpdatedAt = t
		}
	}
	return rows.Err()
}

func memScanStats(rows *sql.Rows) (domain.NamespaceStats, error) {
	var st domain.NamespaceStats
	var created, updated int64
	if err := rows.Scan(&st.Name, &st.MemoryCount, &st.Turns, &st.Facts, &st.Notes, &created, &updated); err != nil {
		return st, fmt.Errorf("namespace stats: %w", err)
	}
	st.CreatedAt, st.UpdatedAt = fromMillis(created), fromMillis(updated)
	return st, nil
}

// DeleteNamespace deletes every memory and failure of a namespace.
func (s *MemoryStore) DeleteNamespace(ctx context.Context, ns string) (int, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, "DELETE FROM memories WHERE namespace = ?", ns)
	if err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	n, _ := res.RowsAffected()
	res, err = tx.ExecContext(ctx, "DELETE FROM memory_failures WHERE namespace = ?", ns)
	if err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	f, _ := res.RowsAffected()
	if n == 0 && f == 0 {
		return 0, domain.ErrNotFound
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	return int(n), nil
}

// ExportNamespace calls fn with every memory of a namespace, oldest first.
func (s *MemoryStore) ExportNamespace(ctx context.Context, ns string, fn func(domain.Memory) error) error {
	rows, err := s.db.read.QueryContext(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = ? ORDER BY created_at, seq", ns)
	if err != nil {
		return fmt.Errorf("export namespace: %w", interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMemoryWith(rows)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return rows.Err()
}

// RecordFailure stores a failure.
func (s *MemoryStore) RecordFailure(ctx context.Context, f domain.MemoryFailure) error {
	_, err := s.db.write.ExecContext(ctx, `INSERT INTO memory_failures (id, namespace, stage, error, attempts, conversation, input, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, f.ID, f.Namespace, f.Stage, f.Error, f.Attempts, memNullString(f.Conversation), f.Input, millis(f.CreatedAt))
	if err != nil {
		return fmt.Errorf("record failure: %w", interpret(err))
	}
	return nil
}

// Failures lists a namespace's failures, newest first.
func (s *MemoryStore) Failures(ctx context.Context, ns string, limit int) ([]domain.MemoryFailure, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT id, namespace, stage, error, attempts, conversation, input, created_at
		FROM memory_failures WHERE namespace = ? ORDER BY created_at DESC, id LIMIT ?`, ns, limit)
	if err != nil {
		return nil, fmt.Errorf("list failures: %w", interpret(err))
	}
	defer rows.Close()
	var out []domain.MemoryFailure
	for rows.Next() {
		var f domain.MemoryFailure
		var conv sql.NullString
		var at int64
		if err := rows.Scan(&f.ID, &f.Namespace, &f.Stage, &f.Error, &f.Attempts, &conv, &f.Input, &at); err != nil {
			return nil, err
		}
		f.Conversation, f.CreatedAt = conv.String, fromMillis(at)
		out = append(out, f)
	}
	return out, rows.Err()
}

// DeleteExpired deletes memories whose expiry has passed.
func (s *MemoryStore) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.write.ExecContext(ctx, "DELETE FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?", millis(now))
	if err != nil {
		return 0, fmt.Errorf("delete expired memories: %w", interpret(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func scanMemory(r scanner) (domain.Memory, error) {
	m, err := scanMemoryWith(r)
	if err != nil {
		return domain.Memory{}, interpret(err)
	}
	return m, nil
}

func scanMemoryWith(r scanner, extra ...any) (domain.Memory, error) {
	var m domain.Memory
	var kind, meta string
	var role, conv, superseded sql.NullString
	var created, updated, valid int64
	var invalid, expires sql.NullInt64
	dest := append([]any{&m.ID, &m.Namespace, &kind, &role, &m.Content, &conv, &meta, &created, &updated, &valid, &invalid, &superseded, &expires}, extra...)
	if err := r.Scan(dest...); err != nil {
		return m, err
	}
	m.Kind, m.Role, m.Conversation, m.SupersededBy = domain.MemoryKind(kind), role.String, conv.String, superseded.String
	m.CreatedAt, m.UpdatedAt, m.ValidFrom = fromMillis(created), fromMillis(updated), fromMillis(valid)
	m.InvalidFrom, m.ExpiresAt = fromNullMillis(invalid), fromNullMillis(expires)
	if meta != "" && meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &m.Metadata); err != nil {
			return m, fmt.Errorf("memory %s metadata: %w", m.ID, err)
		}
	}
	return m, nil
}

// scanMemoryRow is scanMemoryWith without extra columns, for collect.
func scanMemoryRow(r scanner) (domain.Memory, error) { return scanMemoryWith(r) }

func memSearchText(rec domain.MemoryRecord) string {
	if rec.SearchText != "" {
		return rec.SearchText
	}
	return rec.Memory.Content
}

func memMarshalMeta(m map[string]any) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", domain.Invalid("metadata", "metadata cannot be stored: %v", err)
	}
	return string(b), nil
}

func memNullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func memPlaceholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// memEncodeVector stores no vector as NULL, any other as EncodeVector.
func memEncodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return EncodeVector(v)
}

func memSortStrings(s []string) { slices.Sort(s) }

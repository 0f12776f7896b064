package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"capsuled/internal/domain"
	"capsuled/internal/terms"
)

// MemoryStore implements memory.Store on the database.
type MemoryStore struct{ db *DB }

// Memory returns the memory store.
func (db *DB) Memory() *MemoryStore { return &MemoryStore{db: db} }

const memoryColumns = "id, namespace, kind, role, content, conversation, metadata, created_at, updated_at, valid_from, invalid_from, superseded_by, expires_at"

// StoredTurnKeys returns which of keys the namespace's conversation holds
// (see memory.Store).
func (s *MemoryStore) StoredTurnKeys(ctx context.Context, ns, conversation string, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT dedupe_key FROM memories WHERE namespace = $1 AND coalesce(conversation, '') = $2 AND dedupe_key = ANY($3)`,
		ns, conversation, keys)
	if err != nil {
		return nil, fmt.Errorf("stored turn keys: %w", interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("stored turn keys: %w", interpret(err))
		}
		out[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("stored turn keys: %w", interpret(err))
	}
	return out, nil
}

// InsertMemories stores recs in one transaction (see memory.Store). Two
// replicas inserting the same record at once store it once.
func (s *MemoryStore) InsertMemories(ctx context.Context, recs []domain.MemoryRecord) ([]domain.StoredMemory, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("insert memories: %w", interpret(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	out := make([]domain.StoredMemory, 0, len(recs))
	for _, rec := range recs {
		m := rec.Memory
		meta, err := memMarshalMeta(m.Metadata)
		if err != nil {
			return nil, err
		}
		var id string
		err = tx.QueryRow(ctx, `INSERT INTO memories (id, namespace, kind, role, content, search_text, conversation, dedupe_key,
			metadata, created_at, updated_at, valid_from, invalid_from, superseded_by, expires_at, vector, vector_model)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
			ON CONFLICT DO NOTHING RETURNING id`,
			m.ID, m.Namespace, string(m.Kind), nullString(m.Role), m.Content, memSearchText(rec), nullString(m.Conversation),
			nullString(rec.DedupeKey), meta, m.CreatedAt, m.UpdatedAt, m.ValidFrom, m.InvalidFrom, nullString(m.SupersededBy),
			m.ExpiresAt, nullVector(rec.Vector), nullString(rec.VectorModel)).Scan(&id)
		if err == nil {
			out = append(out, domain.StoredMemory{ID: id, Created: true})
			continue
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("insert memory %s: %w", m.ID, interpret(err))
		}
		// A record with the dedupe key, or the id, is already stored.
		if rec.DedupeKey != "" {
			err := tx.QueryRow(ctx, `SELECT id FROM memories WHERE namespace = $1 AND coalesce(conversation, '') = $2 AND dedupe_key = $3`,
				m.Namespace, m.Conversation, rec.DedupeKey).Scan(&id)
			if err == nil {
				out = append(out, domain.StoredMemory{ID: id})
				continue
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return nil, fmt.Errorf("insert memory %s: %w", m.ID, interpret(err))
			}
		}
		var owner string
		if err := tx.QueryRow(ctx, "SELECT namespace FROM memories WHERE id = $1", m.ID).Scan(&owner); err != nil {
			return nil, fmt.Errorf("insert memory %s: %w", m.ID, interpret(err))
		}
		if owner != m.Namespace {
			return nil, fmt.Errorf("insert memory %s: %w: the id belongs to another namespace", m.ID, domain.ErrConflict)
		}
		out = append(out, domain.StoredMemory{ID: m.ID})
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("insert memories: %w", interpret(err))
	}
	return out, nil
}

// GetMemory returns one memory of the namespace.
func (s *MemoryStore) GetMemory(ctx context.Context, ns, id string) (domain.Memory, error) {
	return scanMemory(s.db.pool.QueryRow(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = $1 AND id = $2", ns, id))
}

// GetMemories returns the memories with the given ids, in their order.
func (s *MemoryStore) GetMemories(ctx context.Context, ns string, ids []string) ([]domain.Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.db.pool.Query(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = $1 AND id = ANY($2)", ns, ids)
	if err != nil {
		return nil, fmt.Errorf("get memories: %w", interpret(err))
	}
	found, err := collect(rows, scanMemory)
	if err != nil {
		return nil, err
	}
	index := make(map[string]domain.Memory, len(found))
	for _, m := range found {
		index[m.ID] = m
	}
	out := make([]domain.Memory, 0, len(found))
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
	tag, err := s.db.pool.Exec(ctx, `UPDATE memories SET content = $1, search_text = $2, metadata = $3, updated_at = $4, valid_from = $5,
		invalid_from = $6, superseded_by = $7, expires_at = $8, vector = $9, vector_model = $10 WHERE namespace = $11 AND id = $12`,
		m.Content, memSearchText(rec), meta, m.UpdatedAt, m.ValidFrom, m.InvalidFrom,
		nullString(m.SupersededBy), m.ExpiresAt, nullVector(rec.Vector), nullString(rec.VectorModel), m.Namespace, m.ID)
	if err != nil {
		return fmt.Errorf("update memory %s: %w", m.ID, interpret(err))
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// Supersede marks old as invalid from at, superseded by newID.
func (s *MemoryStore) Supersede(ctx context.Context, ns, oldID, newID string, at time.Time) error {
	tag, err := s.db.pool.Exec(ctx, `UPDATE memories SET invalid_from = $1, superseded_by = $2, updated_at = $1
		WHERE namespace = $3 AND id = $4 AND invalid_from IS NULL`, at, newID, ns, oldID)
	if err != nil {
		return fmt.Errorf("supersede memory %s: %w", oldID, interpret(err))
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// DeleteMemory deletes one memory.
func (s *MemoryStore) DeleteMemory(ctx context.Context, ns, id string) error {
	tag, err := s.db.pool.Exec(ctx, "DELETE FROM memories WHERE namespace = $1 AND id = $2", ns, id)
	if err != nil {
		return fmt.Errorf("delete memory %s: %w", id, interpret(err))
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// live is the condition of live memories, with its three arguments at
// positions n, n+1, n+2.
func live(n int) string {
	return fmt.Sprintf("($%d OR expires_at IS NULL OR expires_at > $%d) AND ($%d OR invalid_from IS NULL)", n, n+1, n+2)
}

func liveArgs(f domain.LiveFilter) []any {
	return []any{f.IncludeExpired, f.Now, f.IncludeSuperseded}
}

// ListMemories pages through a namespace's memories, newest first.
func (s *MemoryStore) ListMemories(ctx context.Context, ns string, f domain.MemoryListFilter) ([]domain.Memory, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	args := append([]any{ns}, liveArgs(f.LiveFilter)...)
	q := "SELECT " + memoryColumns + ", seq FROM memories WHERE namespace = $1 AND " + live(2)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Kind != "" {
		q += " AND kind = " + arg(string(f.Kind))
	}
	if f.Conversation != "" {
		q += " AND conversation = " + arg(f.Conversation)
	}
	if f.Cursor != "" {
		at, seq, err := parseCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += " AND (created_at, seq) < (" + arg(at) + "::timestamptz, " + arg(seq) + "::bigint)"
	}
	q += " ORDER BY created_at DESC, seq DESC LIMIT " + arg(limit+1)
	rows, err := s.db.pool.Query(ctx, q, args...)
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
		next = strconv.FormatInt(out[limit-1].CreatedAt.UnixMicro(), 10) + "." + strconv.FormatInt(seqs[limit-1], 10)
	}
	return out, next, nil
}

// parseCursor reads "<created_at in Unix microseconds>.<seq>".
func parseCursor(c string) (time.Time, int64, error) {
	a, b, ok := strings.Cut(c, ".")
	at, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, 0, domain.Invalid("cursor", "cursor %q is not one this server gave", c)
	}
	return time.UnixMicro(at).UTC(), seq, nil
}

// SearchText ranks memories by full-text relevance (ts_rank_cd) against the
// words of query; any word matches.
func (s *MemoryStore) SearchText(ctx context.Context, ns, query string, limit int, f domain.LiveFilter) ([]domain.MemoryHit, error) {
	words := terms.Memory(query)
	if len(words) == 0 || limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.pool.Query(ctx, `WITH q AS (
		SELECT string_agg(p::text, ' | ')::tsquery AS q FROM (
			SELECT plainto_tsquery('english', t) AS p FROM unnest($1::text[]) t) x WHERE numnode(p) > 0)
		SELECT m.id, ts_rank_cd(m.tsv, q.q) AS s FROM memories m, q
		WHERE m.tsv @@ q.q AND m.namespace = $2 AND `+live(3)+`
		ORDER BY s DESC, m.seq LIMIT $6`, append(append([]any{words, ns}, liveArgs(f)...), limit)...)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", interpret(err))
	}
	return collect(rows, func(r pgx.Row) (domain.MemoryHit, error) {
		var h domain.MemoryHit
		err := r.Scan(&h.ID, &h.Score)
		return h, err
	})
}

// Vectors returns the namespace's vectors of one embedding model.
func (s *MemoryStore) Vectors(ctx context.Context, ns, model string, f domain.LiveFilter) ([]domain.MemoryVector, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT id, vector FROM memories WHERE namespace = $1 AND vector_model = $2 AND vector IS NOT NULL AND "+live(3),
		append([]any{ns, model}, liveArgs(f)...)...)
	if err != nil {
		return nil, fmt.Errorf("memory vectors: %w", interpret(err))
	}
	return collect(rows, func(r pgx.Row) (domain.MemoryVector, error) {
		var v domain.MemoryVector
		var pv pgvector.Vector
		if err := r.Scan(&v.ID, &pv); err != nil {
			return v, fmt.Errorf("memory vectors: %w", err)
		}
		v.Vec = pv.Slice()
		return v, nil
	})
}

// Recent returns the namespace's newest memories.
func (s *MemoryStore) Recent(ctx context.Context, ns string, kind domain.MemoryKind, limit int, f domain.LiveFilter) ([]domain.Memory, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = $1 AND "+live(2)+
		" AND ($5 = '' OR kind = $5) ORDER BY valid_from DESC, seq DESC LIMIT $6",
		append(append([]any{ns}, liveArgs(f)...), string(kind), limit)...)
	if err != nil {
		return nil, fmt.Errorf("recent memories: %w", interpret(err))
	}
	return collect(rows, scanMemory)
}

// Owners returns the namespace of each stored id.
func (s *MemoryStore) Owners(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	rows, err := s.db.pool.Query(ctx, "SELECT id, namespace FROM memories WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("memory owners: %w", interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id, ns string
		if err := rows.Scan(&id, &ns); err != nil {
			return nil, err
		}
		out[id] = ns
	}
	return out, rows.Err()
}

// namespaceStats counts memories and failures by namespace ($1: now; $2:
// one namespace, or the empty string for all).
const namespaceStats = `WITH m AS (
	SELECT namespace,
		count(*) FILTER (WHERE (expires_at IS NULL OR expires_at > $1) AND invalid_from IS NULL) AS live,
		count(*) FILTER (WHERE kind = 'turn') AS turns, count(*) FILTER (WHERE kind = 'fact') AS facts,
		count(*) FILTER (WHERE kind = 'note') AS notes, min(created_at) AS first, max(updated_at) AS last
	FROM memories WHERE $2 = '' OR namespace = $2 GROUP BY namespace),
f AS (
	SELECT namespace, count(*) AS n, min(created_at) AS first, max(created_at) AS last
	FROM memory_failures WHERE $2 = '' OR namespace = $2 GROUP BY namespace)
SELECT coalesce(m.namespace, f.namespace), coalesce(m.live, 0), coalesce(m.turns, 0), coalesce(m.facts, 0),
	coalesce(m.notes, 0), coalesce(f.n, 0), coalesce(m.first, f.first),
	CASE WHEN m.last IS NULL THEN f.last WHEN f.last IS NULL THEN m.last ELSE greatest(m.last, f.last) END
FROM m FULL JOIN f ON f.namespace = m.namespace ORDER BY 1`

func scanStats(r pgx.Row) (domain.NamespaceStats, error) {
	var st domain.NamespaceStats
	if err := r.Scan(&st.Name, &st.MemoryCount, &st.Turns, &st.Facts, &st.Notes, &st.Failures, &st.CreatedAt, &st.UpdatedAt); err != nil {
		return st, fmt.Errorf("namespace stats: %w", err)
	}
	st.CreatedAt, st.UpdatedAt = utc(st.CreatedAt), utc(st.UpdatedAt)
	return st, nil
}

// Namespaces lists the namespaces that hold memories or failures, by name.
func (s *MemoryStore) Namespaces(ctx context.Context, now time.Time) ([]domain.NamespaceStats, error) {
	rows, err := s.db.pool.Query(ctx, namespaceStats, now, "")
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", interpret(err))
	}
	out, err := collect(rows, scanStats)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b domain.NamespaceStats) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Namespace returns one namespace's counts.
func (s *MemoryStore) Namespace(ctx context.Context, ns string, now time.Time) (domain.NamespaceStats, error) {
	if ns == "" {
		return domain.NamespaceStats{}, domain.ErrNotFound
	}
	st, err := scanStats(s.db.pool.QueryRow(ctx, namespaceStats, now, ns))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.NamespaceStats{}, domain.ErrNotFound
	}
	return st, err
}

// DeleteNamespace deletes every memory and failure of a namespace.
func (s *MemoryStore) DeleteNamespace(ctx context.Context, ns string) (int, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	n, err := tx.Exec(ctx, "DELETE FROM memories WHERE namespace = $1", ns)
	if err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	f, err := tx.Exec(ctx, "DELETE FROM memory_failures WHERE namespace = $1", ns)
	if err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	if n.RowsAffected() == 0 && f.RowsAffected() == 0 {
		return 0, domain.ErrNotFound
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("delete namespace: %w", interpret(err))
	}
	return int(n.RowsAffected()), nil
}

// ExportNamespace calls fn with every memory of a namespace, oldest first.
func (s *MemoryStore) ExportNamespace(ctx context.Context, ns string, fn func(domain.Memory) error) error {
	rows, err := s.db.pool.Query(ctx, "SELECT "+memoryColumns+" FROM memories WHERE namespace = $1 ORDER BY created_at, seq", ns)
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
	_, err := s.db.pool.Exec(ctx, `INSERT INTO memory_failures (id, namespace, stage, error, attempts, conversation, input, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, f.ID, f.Namespace, f.Stage, f.Error, f.Attempts, nullString(f.Conversation), f.Input, f.CreatedAt)
	if err != nil {
		return fmt.Errorf("record failure: %w", interpret(err))
	}
	return nil
}

// Failures lists a namespace's failures, newest first.
func (s *MemoryStore) Failures(ctx context.Context, ns string, limit int) ([]domain.MemoryFailure, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT id, namespace, stage, error, attempts, coalesce(conversation, ''), input, created_at
		FROM memory_failures WHERE namespace = $1 ORDER BY created_at DESC, id LIMIT $2`, ns, limit)
	if err != nil {
		return nil, fmt.Errorf("list failures: %w", interpret(err))
	}
	return collect(rows, func(r pgx.Row) (domain.MemoryFailure, error) {
		var f domain.MemoryFailure
		err := r.Scan(&f.ID, &f.Namespace, &f.Stage, &f.Error, &f.Attempts, &f.Conversation, &f.Input, &f.CreatedAt)
		f.CreatedAt = utc(f.CreatedAt)
		return f, err
	})
}

// DeleteExpired deletes memories whose expiry has passed.
func (s *MemoryStore) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.db.pool.Exec(ctx, "DELETE FROM memories WHERE expires_at IS NOT NULL AND expires_at <= $1", now)
	if err != nil {
		return 0, fmt.Errorf("delete expired memories: %w", interpret(err))
	}
	return int(tag.RowsAffected()), nil
}

func scanMemory(r pgx.Row) (domain.Memory, error) {
	m, err := scanMemoryWith(r)
	if err != nil {
		return domain.Memory{}, interpret(err)
	}
	return m, nil
}

func scanMemoryWith(r pgx.Row, extra ...any) (domain.Memory, error) {
	var m domain.Memory
	var kind string
	var meta []byte
	var role, conv, superseded *string
	dest := append([]any{&m.ID, &m.Namespace, &kind, &role, &m.Content, &conv, &meta, &m.CreatedAt, &m.UpdatedAt, &m.ValidFrom,
		&m.InvalidFrom, &superseded, &m.ExpiresAt}, extra...)
	if err := r.Scan(dest...); err != nil {
		return m, err
	}
	m.Kind, m.Role, m.Conversation, m.SupersededBy = domain.MemoryKind(kind), deref(role), deref(conv), deref(superseded)
	m.CreatedAt, m.UpdatedAt, m.ValidFrom = utc(m.CreatedAt), utc(m.UpdatedAt), utc(m.ValidFrom)
	m.InvalidFrom, m.ExpiresAt = utcPtr(m.InvalidFrom), utcPtr(m.ExpiresAt)
	if s := string(meta); s != "" && s != "{}" {
		if err := json.Unmarshal(meta, &m.Metadata); err != nil {
			return m, fmt.Errorf("memory %s metadata: %w", m.ID, err)
		}
	}
	return m, nil
}

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

// nullString stores "" as NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// nullVector stores an empty vector as NULL.
func nullVector(v []float32) *pgvector.Vector {
	if len(v) == 0 {
		return nil
	}
	pv := pgvector.NewVector(v)
	return &pv
}

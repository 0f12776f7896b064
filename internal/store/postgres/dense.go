package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
)

// The store searches vectors itself: the engine keeps none in memory.
var (
	_ retrieval.StoreSearcher = (*CapsuleStore)(nil)
	_ retrieval.ChunkTexter   = (*CapsuleStore)(nil)
)

// hnswDim is the width of the vectors the HNSW index chunks_hnsw covers
// (migration 0002); vectors of other widths are scanned.
const hnswDim = 384

// maxEfSearch is pgvector's largest hnsw.ef_search; minEfSearch is the
// least capsuled asks for. pgvector's default, 40, gave recall@10 0.98
// against exact search on SciFact's 12,098 chunks (0.995 at 100, 0.9987 at
// 200). The walk needs a wider beam as the graph grows: on `bench scale`'s
// synthetic vectors (built to be harder than a model's; m 16,
// ef_construction 64, pgvector's defaults) recall@10 was 0.942 at 200 on
// 200,000 chunks, and 0.83 / 0.913 / 0.943 / 0.963 / 0.98 at 200 / 400 /
// 600 / 800 / 1000 on 1,058,209 chunks, for a semantic p50 of 14 / 19 / 26
// / 35 / 38 ms (shared_buffers holding the index, load 1.4–2.3). So the
// floor grows with the index: efSearchFloor. A denser graph needs a
// narrower beam for the same recall: on the same million chunks with m 24,
// ef_construction 128, recall@10 was 0.903 / 0.953 / 0.977 / 0.983 at 200
// / 300 / 400 / 600 (0.95 at about 300 against about 700 for m 16), and on
// 200,000 chunks m 24 at 200 gave what m 16 gave at 400 (0.98 against
// 0.97), so the floor shrinks as (16/m)², fitted on those two graphs.
// Operators who want more recall raise the server's hnsw.ef_search, which
// is the floor (docs/deploy.md), or rebuild the index with a higher m
// (`capsuled indexes build --hnsw-m`).
const (
	maxEfSearch = 1000
	minEfSearch = 200
)

// efSizeBase is the number of index rows up to which minEfSearch is the
// floor; above it the floor grows as the rows' power 2/3 (efSearchFloor):
// for m 16, 274 at 200,000 rows, 800 at a million, maxEfSearch from about
// 1.4 million; for m 24, 356 at a million.
const efSizeBase = 125000

// efSearchFloor is the SQL expression of the hnsw.ef_search floor for an
// index of rows entries built with m (SQL expressions: pg_class.reltuples
// of chunks_hnsw, which VACUUM, ANALYZE and CREATE INDEX keep, -1 before
// any; the index's m, NULL for pgvector's default 16): minEfSearch ·
// max(rows / efSizeBase, 1)^(2/3) · (16 / m)², rounded, at least
// minEfSearch.
func efSearchFloor(rows, m string) string {
	return fmt.Sprintf("greatest(%d, (%d * power(greatest(coalesce(%s, 0)::float8 / %d, 1), 2.0 / 3) * power(%d.0 / greatest(coalesce(%s, %d), 2), 2))::int)",
		minEfSearch, minEfSearch, rows, efSizeBase, DefaultHNSW.M, m, DefaultHNSW.M)
}

// hnswM is the SQL expression of chunks_hnsw's m: NULL where its definition
// names none (pgvector's default, 16).
const hnswM = `(SELECT o.option_value::int FROM pg_class c, pg_options_to_table(c.reloptions) o
	WHERE c.oid = to_regclass('chunks_hnsw') AND o.option_name = 'm')`

// efSearchSettings is the statement that sets a transaction's
// hnsw.ef_search to the largest of the server's setting, $1 (twice the
// candidates) and efSearchFloor of chunks_hnsw's rows and m, at most $2
// (maxEfSearch), and hnsw.iterative_scan to relaxed_order. The server's
// setting reads as NULL, or "" once a session has set and reset it, where
// pgvector is not loaded yet: pgvector's default, 40, then.
var efSearchSettings = `SELECT set_config('hnsw.ef_search',
		least(greatest(coalesce(nullif(current_setting('hnsw.ef_search', true), '')::int, 40), $1::int,
			` + efSearchFloor("(SELECT reltuples FROM pg_class WHERE oid = to_regclass('chunks_hnsw'))", hnswM) + `), $2::int)::text, true),
	set_config('hnsw.iterative_scan', 'relaxed_order', true)`

// smallCapsule is the number of chunks below which a capsule's dense search
// scores every chunk instead of reading the HNSW index, which covers every
// capsule: a small capsule's chunks are too few among the index's for its
// walk to meet k of them before hnsw.max_scan_tuples, and scoring them all
// costs less (and is exact).
const smallCapsule = 2000

// A filter that an index answers (itemFilter's indexed) and whose items
// hold few chunks is answered by scoring those chunks exactly instead of
// walking the HNSW graph: the rule is at most exactFilterItems items
// holding at most exactFilterChunks chunks, which acceptedItems counts
// through the index, reading no more than exactFilterItems+1 items. The
// graph walk of a selective filter reads many nodes for each one that
// passes (pgvector's iterative scan) and loses recall (0.80 at 1,100,628
// chunks with a 1% filter, ef_search 200), where the exact scan of the
// chunks that pass costs in proportion to them and misses nothing
// (docs/experiments/postgres.md has the measurements behind the bounds).
const (
	exactFilterItems  = 4000
	exactFilterChunks = 25000
)

// acceptedItems is the CTEs "acc", the capsule's items (id, chunk_count)
// that pass cond (from laxItemFilter, on items aliased i), at most
// exactFilterItems+1 of them, and "exact", one row whose yes says whether
// they are few enough to score exactly. capsule is an expression of the
// capsule's id; itemsArg and chunksArg are the parameters holding
// exactFilterItems and exactFilterChunks.
func acceptedItems(capsule, cond, itemsArg, chunksArg string) string {
	return `acc AS MATERIALIZED (SELECT i.id, i.chunk_count FROM items i WHERE i.capsule_id = ` + capsule + ` AND ` + cond + ` LIMIT ` + itemsArg + ` + 1),
		exact AS MATERIALIZED (SELECT count(*) <= ` + itemsArg + ` AND coalesce(sum(chunk_count), 0) <= ` + chunksArg + ` AS yes FROM acc)`
}

// itemsWhere is cond (from itemFilter, on items aliased i) as a condition on
// the chunk aliased k, or "" for no condition.
func itemsWhere(cond string) string {
	if cond == "" {
		return ""
	}
	return " AND EXISTS (SELECT FROM items i WHERE i.id = k.item_id AND " + cond + ")"
}

// DenseTopK returns up to k chunks of the capsule, of items that pass w's
// item filters (those itemFilter translates), nearest to the unit vector q
// by cosine, with their cosines (1 − pgvector's cosine distance), best
// first.
//
// For 384-dimensional vectors it reads the HNSW index chunks_hnsw, in a
// transaction that sets hnsw.ef_search to 2k (at least the server's own
// setting and efSearchFloor of the index's size, at most maxEfSearch) and
// hnsw.iterative_scan to relaxed_order, so that
// pgvector keeps walking the graph while the capsule and the filters reject
// what it finds, up to hnsw.max_scan_tuples (the server's setting). The
// filters are applied inside that scan. When the index gives fewer than k
// chunks (a capsule or filter that selective that the walk stopped first,
// or fewer than k chunks pass), the chunks that pass are scored exactly
// instead, so a filter returns k chunks whenever k pass. Capsules of fewer
// than smallCapsule chunks, vectors of other widths, and filters an index
// answers whose items hold few chunks (exactFilterItems, exactFilterChunks)
// are scored exactly.
func (s *CapsuleStore) DenseTopK(ctx context.Context, capsule string, q []float32, k int, w domain.Wishlist) ([]retrieval.Match, error) {
	if k <= 0 || len(q) == 0 {
		return nil, nil
	}
	cond, args, indexed := itemFilter(w, []any{capsule, pgvector.NewVector(q), k})
	if len(q) == hnswDim {
		ms, final, err := s.denseHNSW(ctx, k, cond, indexed, w, args)
		if err != nil || final || len(ms) == k {
			return ms, err
		}
	}
	args = append(args, len(q))
	rows, err := s.db.pool.Query(ctx, `SELECT k.item_id, k.idx, 1 - (k.embedding <=> $2) FROM chunks k
		WHERE k.capsule_id = (SELECT id FROM capsules WHERE name = $1) AND vector_dims(k.embedding) = $`+fmt.Sprint(len(args))+
		itemsWhere(cond)+` ORDER BY k.embedding <=> $2, k.item_id, k.idx LIMIT $3`, args...)
	if err != nil {
		return nil, fmt.Errorf("dense search: %w", interpret(err))
	}
	ms, _, err := collectMatches(rows)
	return ms, err
}

// denseHNSW is DenseTopK's index scan: the settings and the query go in one
// batch, so one round trip and one (implicit) transaction, to which the
// settings are local. With an indexed filter the same statement lists the
// items that pass first and, when they are few, scores their chunks
// exactly instead (final: the result is the exact one).
func (s *CapsuleStore) denseHNSW(ctx context.Context, k int, cond string, indexed bool, w domain.Wishlist, args []any) (ms []retrieval.Match, final bool, err error) {
	b := &pgx.Batch{}
	b.Queue(efSearchSettings, 2*k, maxEfSearch)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	// A capsule of fewer than smallCapsule chunks is left to the exact
	// scan (a one-time filter: the index is not read).
	small := arg(smallCapsule)
	hnsw := func(more string) string {
		return `SELECT k.item_id, k.idx, 1 - (k.embedding::vector(384) <=> $2::vector(384)) FROM chunks k
		WHERE (SELECT count(*) FROM (SELECT FROM chunks WHERE capsule_id = (SELECT id FROM cap) LIMIT ` + small + `) x) >= ` + small + more + `
		AND k.capsule_id = (SELECT id FROM cap) AND vector_dims(k.embedding) = 384` + itemsWhere(cond) + `
		ORDER BY k.embedding::vector(384) <=> $2::vector(384) LIMIT $3`
	}
	query := `WITH cap AS MATERIALIZED (SELECT id FROM capsules WHERE name = $1) ` + hnsw("")
	if indexed {
		// The exact branch, or the index's: one-time filters on "exact"
		// pick one, and a marker row (idx -1) says the exact one ran. The
		// exact branch lists the items by the lax filter (its parameters
		// follow the strict one's).
		var lax string
		lax, args, _ = laxItemFilter(w, args)
		query = `WITH cap AS MATERIALIZED (SELECT id FROM capsules WHERE name = $1),
			` + acceptedItems("(SELECT id FROM cap)", lax, arg(exactFilterItems), arg(exactFilterChunks)) + `
			(SELECT k.item_id, k.idx, 1 - k.d FROM acc
				CROSS JOIN LATERAL (SELECT k.item_id, k.idx, k.embedding <=> $2 AS d FROM chunks k
					WHERE k.item_id = acc.id AND vector_dims(k.embedding) = 384) k
				WHERE (SELECT yes FROM exact)
				ORDER BY k.d, k.item_id, k.idx LIMIT $3)
			UNION ALL
			(SELECT NULL, -1, NULL WHERE (SELECT yes FROM exact))
			UNION ALL
			(` + hnsw(" AND NOT (SELECT yes FROM exact)") + `)`
	}
	b.Queue(query, args...).Query(func(rows pgx.Rows) (err error) {
		ms, final, err = collectMatches(rows)
		return err
	})
	if err := s.db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, fmt.Errorf("dense search: %w", interpret(err))
	}
	return ms, final, nil
}

// collectMatches reads (item_id, idx, cosine) rows and closes them; marked
// reports a marker row (idx -1, no item), which it leaves out.
func collectMatches(rows pgx.Rows) (out []retrieval.Match, marked bool, err error) {
	defer rows.Close()
	for rows.Next() {
		var id *string
		var m retrieval.Match
		var cos *float64
		if err := rows.Scan(&id, &m.Idx, &cos); err != nil {
			return nil, false, fmt.Errorf("dense search: %w", err)
		}
		if id == nil || cos == nil {
			marked = true
			continue
		}
		m.ItemID, m.Cosine = *id, *cos
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("dense search: %w", interpret(err))
	}
	return out, marked, nil
}

// ChunkCosines returns the cosine of q with each chunk (itemIDs[i],
// idxs[i]) of the capsule, computed as DenseTopK does; found[i] is false
// where the chunk is gone or has no vector of q's width.
func (s *CapsuleStore) ChunkCosines(ctx context.Context, capsule string, q []float32, itemIDs []string, idxs []int) ([]float64, []bool, error) {
	if len(itemIDs) != len(idxs) {
		return nil, nil, fmt.Errorf("chunk cosines: %d ids, %d idxs", len(itemIDs), len(idxs))
	}
	cos, found := make([]float64, len(itemIDs)), make([]bool, len(itemIDs))
	if len(itemIDs) == 0 {
		return cos, found, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT r.n, 1 - (k.embedding <=> $2) FROM unnest($3::text[], $4::int[]) WITH ORDINALITY r(item_id, idx, n)
		JOIN chunks k ON k.item_id = r.item_id AND k.idx = r.idx
		WHERE k.capsule_id = (SELECT id FROM capsules WHERE name = $1) AND vector_dims(k.embedding) = $5`,
		capsule, pgvector.NewVector(q), itemIDs, idxs, len(q))
	if err != nil {
		return nil, nil, fmt.Errorf("chunk cosines: %w", interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var c float64
		if err := rows.Scan(&n, &c); err != nil {
			return nil, nil, fmt.Errorf("chunk cosines: %w", err)
		}
		if n >= 1 && n <= len(cos) {
			cos[n-1], found[n-1] = c, true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("chunk cosines: %w", interpret(err))
	}
	return cos, found, nil
}

// ChunkTexts reads several chunks' texts in one query
// (retrieval.ChunkTexter): texts[i] is the text of chunk idxs[i] of item
// itemIDs[i], found[i] false where it no longer exists.
func (s *CapsuleStore) ChunkTexts(ctx context.Context, itemIDs []string, idxs []int) ([]string, []bool, error) {
	if len(itemIDs) != len(idxs) {
		return nil, nil, fmt.Errorf("chunk texts: %d ids, %d idxs", len(itemIDs), len(idxs))
	}
	texts, found := make([]string, len(itemIDs)), make([]bool, len(itemIDs))
	if len(itemIDs) == 0 {
		return texts, found, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT r.n, k.text FROM unnest($1::text[], $2::int[]) WITH ORDINALITY r(item_id, idx, n)
		JOIN chunks k ON k.item_id = r.item_id AND k.idx = r.idx`, itemIDs, idxs)
	if err != nil {
		return nil, nil, fmt.Errorf("chunk texts: %w", interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var text string
		if err := rows.Scan(&n, &text); err != nil {
			return nil, nil, fmt.Errorf("chunk texts: %w", err)
		}
		if n >= 1 && n <= len(texts) {
			texts[n-1], found[n-1] = text, true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("chunk texts: %w", interpret(err))
	}
	return texts, found, nil
}

// ItemsByID returns the capsule's searchable items among ids.
func (s *CapsuleStore) ItemsByID(ctx context.Context, capsule string, ids []string) ([]domain.Item, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.db.pool.Query(ctx, "SELECT "+itemColumns+itemFrom+
		" WHERE c.name = $1 AND i.id = ANY($2::text[]) AND i.indexed_hash IS NOT NULL", capsule, ids)
	if err != nil {
		return nil, fmt.Errorf("items by id: %w", interpret(err))
	}
	return collect(rows, scanItem)
}

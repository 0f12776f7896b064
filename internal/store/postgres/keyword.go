package postgres

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"capsuled/internal/domain"
)

// SearchableItems returns the capsule's items that have chunks in the index.
func (s *CapsuleStore) SearchableItems(ctx context.Context, capsule string) ([]domain.Item, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT "+itemColumns+itemFrom+" WHERE c.name = $1 AND i.indexed_hash IS NOT NULL ORDER BY i.id", capsule)
	if err != nil {
		return nil, fmt.Errorf("searchable items: %w", err)
	}
	return collect(rows, scanItem)
}

// ChunkVectors calls fn with every chunk vector of the capsule, by item and
// idx (chunks without a vector are skipped).
func (s *CapsuleStore) ChunkVectors(ctx context.Context, capsule string, fn func(itemID string, idx int, vec []float32) error) error {
	rows, err := s.db.pool.Query(ctx, `SELECT k.item_id, k.idx, k.embedding FROM chunks k
		WHERE k.capsule_id = (SELECT id FROM capsules WHERE name = $1) AND k.embedding IS NOT NULL ORDER BY k.item_id, k.idx`, capsule)
	if err != nil {
		return fmt.Errorf("chunk vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var idx int
		var v pgvector.Vector
		if err := rows.Scan(&id, &idx, &v); err != nil {
			return err
		}
		if err := fn(id, idx, v.Slice()); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Keyword calls fn with the capsule's chunks that match any of the terms, in
// ranking order (best first), with a positive score, until fn returns false:
// pg_textsearch's BM25 where the store uses it, else ts_rank_cd. Terms are
// data, never query syntax.
//
// With pg_textsearch the rows come from the BM25 index in score order
// (ORDER BY text <@> query LIMIT n: its top-k scan, which does not score
// every matching chunk), in pages: a consumer that wants more than a page
// gets the next, larger one. Rows of other capsules are filtered out as the
// scan goes. Equal scores are ordered by item id, then idx (a group of them
// that a page cuts short waits for the next page).
// If the index gives nothing, the chunks that hold a query word are scored
// one by one instead (keywordRescored), so an index that lost its state
// (pg_textsearch 0.6.1 can come back from a restart with empty corpus
// statistics, and its scan then returns no row) still answers.
func (s *CapsuleStore) Keyword(ctx context.Context, capsule string, terms []string, fn func(itemID string, idx int, score float64) bool) error {
	return s.KeywordN(ctx, capsule, terms, firstKeywordPage, fn)
}

// KeywordN is Keyword for a caller that expects to need about want hits: with
// pg_textsearch the first page holds that many (then pages grow fourfold).
func (s *CapsuleStore) KeywordN(ctx context.Context, capsule string, terms []string, want int, fn func(itemID string, idx int, score float64) bool) error {
	return s.KeywordWhere(ctx, capsule, terms, want, domain.Wishlist{}, fn)
}

// KeywordWhere is KeywordN over the chunks of the items that pass w's item
// filters (those itemFilter translates; the engine checks the rest).
func (s *CapsuleStore) KeywordWhere(ctx context.Context, capsule string, terms []string, want int, w domain.Wishlist, fn func(itemID string, idx int, score float64) bool) error {
	if len(terms) == 0 {
		return nil
	}
	var capID int64
	if s.db.fullText == FullTextBM25 {
		var share float64
		if err := s.db.pool.QueryRow(ctx, `SELECT c.id, `+capsuleShare+` FROM capsules c WHERE c.name = $1`, capsule).Scan(&capID, &share); err != nil {
			return interpret(err)
		}
		// More than wanted: a full page holds back its last group of equal
		// scores (the next page, four times the size, holds it whole), so
		// want rows need want+1 unless the last ones tie, and a margin of
		// an eighth keeps a tie group at the boundary (duplicated chunks)
		// from costing a second, larger scan.
		return s.keywordBM25(ctx, capID, share, strings.Join(terms, " "), max(want, 1)+max(want, 1)/8+1, w, fn)
	}
	if err := s.db.pool.QueryRow(ctx, "SELECT id FROM capsules WHERE name = $1", capsule).Scan(&capID); err != nil {
		return interpret(err)
	}
	// Each term becomes its own plainto_tsquery, ORed: its lexemes come
	// out quoted, so no term is read as tsquery syntax.
	cond, args, _ := itemFilter(w, []any{capID, terms})
	rows, err := s.db.pool.Query(ctx, `WITH q AS (
		SELECT string_agg(p::text, ' | ')::tsquery AS q FROM (
			SELECT plainto_tsquery('english', t) AS p FROM unnest($2::text[]) t) x WHERE numnode(p) > 0)
		SELECT k.item_id, k.idx, ts_rank_cd(k.tsv, q.q) AS s FROM chunks k, q
		WHERE k.capsule_id = $1 AND k.tsv @@ q.q`+itemsWhere(cond)+` ORDER BY s DESC, k.item_id, k.idx`, args...)
	if err != nil {
		return fmt.Errorf("keyword search: %w", err)
	}
	return streamScored(rows, fn)
}

// KeywordBounds returns, for each term, the best score the term alone
// reaches in the capsule (0 where it matches nothing): the query-relative
// keyword bound, in one round trip. With pg_textsearch each term's bound is
// the index's top-1 for that term; if the index gives nothing for any term,
// each is scored on the chunks that hold it instead (boundsRescored; see
// Keyword). Without it, each term's best ts_rank_cd.
func (s *CapsuleStore) KeywordBounds(ctx context.Context, capsule string, terms []string) ([]float64, error) {
	out := make([]float64, len(terms))
	if len(terms) == 0 {
		return out, nil
	}
	var capID int64
	if err := s.db.pool.QueryRow(ctx, "SELECT id FROM capsules WHERE name = $1", capsule).Scan(&capID); err != nil {
		return nil, interpret(err)
	}
	var queries []string
	if s.db.fullText == FullTextBM25 {
		// The index's own score of each term's top chunk (indexScore), as
		// keywordBM25 reads the chunks' scores: one score space.
		queries = []string{`SELECT coalesce((SELECT -bm25_get_current_score() FROM chunks k
				WHERE k.capsule_id = $1 ORDER BY k.text <@> to_bm25query(t.term, 'chunks_bm25') LIMIT 1), 0)
			FROM unnest($2::text[]) WITH ORDINALITY t(term, n) ORDER BY t.n`,
			boundsRescored}
	} else {
		queries = []string{`SELECT coalesce((SELECT max(ts_rank_cd(k.tsv, q.q)) FROM chunks k
				WHERE k.capsule_id = $1 AND k.tsv @@ q.q), 0)
			FROM unnest($2::text[]) WITH ORDINALITY t(term, n), LATERAL (SELECT plainto_tsquery('english', t.term) AS q) q
			ORDER BY t.n`}
	}
	for i, q := range queries {
		var rows pgx.Rows
		var err error
		if s.db.fullText == FullTextBM25 && i == 0 {
			rows, err = s.indexScored(ctx, q, capID, terms)
		} else {
			rows, err = s.db.pool.Query(ctx, q, capID, terms)
		}
		if err != nil {
			return nil, fmt.Errorf("keyword bounds: %w", interpret(err))
		}
		out = out[:0]
		found := false
		for rows.Next() {
			var b float64
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return nil, fmt.Errorf("keyword bounds: %w", err)
			}
			out = append(out, max(b, 0))
			found = found || b > 0
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("keyword bounds: %w", interpret(err))
		}
		if len(out) != len(terms) {
			return nil, fmt.Errorf("keyword bounds: %d for %d terms", len(out), len(terms))
		}
		if found {
			break
		}
	}
	return out, nil
}

// firstKeywordPage is the first page of a BM25 keyword search: a hybrid
// query's depth (100) fits in it.
const firstKeywordPage = 128

// capsuleShare is the SQL expression of the share of the chunks table's
// rows that belong to the capsule c, from the planner's statistics (the
// most common values of chunks.capsule_id, which ANALYZE and autovacuum
// keep: the 100 largest capsules with the default statistics target), -1
// where they do not say. It sizes the keyword page of a capsule that is a
// small part of the index (keywordSized), as a filter's share does.
const capsuleShare = `coalesce((SELECT m.f FROM pg_stats s,
		unnest(s.most_common_vals::text::bigint[], s.most_common_freqs) m(v, f)
		WHERE s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'capsule_id' AND m.v = c.id), -1)`

// accepted is what acceptedIDs found: the items that pass a filter, the
// chunks they hold, and the rows of the chunks table (pg_class.reltuples,
// ≤ 0 where never counted), which size a keyword page (keywordSized).
type accepted struct {
	ids       []string
	chunks    int64
	tableRows float64
}

// acceptedIDs lists the capsule's items that pass w's item filters (an
// indexed laxItemFilter: a superset, which the engine checks) when they are
// few (acceptedItems' rule); ok is false when they are more.
func (s *CapsuleStore) acceptedIDs(ctx context.Context, capID int64, w domain.Wishlist) (a accepted, ok bool, err error) {
	cond, args, _ := laxItemFilter(w, []any{capID})
	args = append(args, exactFilterItems, exactFilterChunks)
	n := len(args)
	err = s.db.pool.QueryRow(ctx, `WITH `+acceptedItems("$1", cond, fmt.Sprintf("$%d", n-1), fmt.Sprintf("$%d", n))+`
		SELECT (SELECT yes FROM exact), coalesce((SELECT array_agg(id) FROM acc), '{}'),
			(SELECT coalesce(sum(chunk_count), 0) FROM acc),
			coalesce((SELECT reltuples FROM pg_class WHERE oid = to_regclass('chunks')), -1)`, args...).Scan(&ok, &a.ids, &a.chunks, &a.tableRows)
	if err != nil || !ok {
		return accepted{}, false, interpret(err)
	}
	return a, true, nil
}

// sizedPageShare is the largest share of the index's rows a filter's chunks,
// or a capsule's, may hold for keywordSized to answer it. pg_textsearch
// cannot see a filter, nor the capsule (one index holds every capsule):
// given `LIMIT n` it computes the index's top n, and when the filter
// rejects rows it computes the top 2n again from the start, then 4n, until
// n rows pass. For a filter passing 1% of a million chunks that is
// eight passes over the query terms' postings, the top 113, 226, …, 14,464
// (442 ms for one three-word query at load 4, against 203 ms for one pass
// of the top 14,000; docs/experiments/postgres.md). Where the filter passes
// half the rows or more, the doubling costs at most one extra pass, and the
// filtered scan stays.
const sizedPageShare = 0.5

// maxSizedPage caps keywordSized's first page: a filter that passes a
// very small share of a large index starts at this many rows and grows
// from there, fourfold a page.
const maxSizedPage = 200000

// sizedPage is keywordSized's first page: enough of the index's top rows
// that want of them pass a filter passing share of the rows, with a
// quarter's margin for a filter whose chunks score below the average.
func sizedPage(want int, share float64) int {
	n := float64(want) / share * 1.25
	if n >= maxSizedPage {
		return maxSizedPage
	}
	return max(want, int(math.Ceil(n)))
}

// keywordBM25 is Keyword through pg_textsearch. The query is the terms as
// text: the index's analyzer splits and stems it, so nothing in it is syntax.
// Scores are the index's own (indexScored), not the exact `<@>` rescoring.
func (s *CapsuleStore) keywordBM25(ctx context.Context, capID int64, capShare float64, query string, first int, w domain.Wishlist, fn func(itemID string, idx int, score float64) bool) error {
	type key struct {
		item string
		idx  int
	}
	sent := map[key]bool{}
	cond, args, indexed := itemFilter(w, []any{capID, query, 0})
	where := itemsWhere(cond)
	byIDs := false // the filter's items listed: where checks their ids
	if indexed {
		// Few items pass: the index's rows are checked against their ids
		// (a hashed array, not the filter's subquery per row). The index
		// scan goes on past the page's LIMIT while rows are filtered out
		// (pg_textsearch cannot see through the filter), so the page stays
		// the size wanted.
		acc, ok, err := s.acceptedIDs(ctx, capID, w)
		if err != nil {
			return fmt.Errorf("keyword search: %w", err)
		}
		if ok {
			if len(acc.ids) == 0 || acc.chunks == 0 {
				return nil
			}
			if share := float64(acc.chunks) / acc.tableRows; acc.tableRows > 0 && share < sizedPageShare {
				done, err := s.keywordSized(ctx, query, sizedPage(first, share), "k.item_id = ANY($3::text[])", []any{acc.ids}, fn)
				if err != nil || done {
					return err
				}
				// The index gave nothing for the query at all.
				return s.keywordRescored(ctx, capID, query, w, fn)
			}
			args = append(args[:3:3], acc.ids)
			where = " AND k.item_id = ANY($4::text[])"
			byIDs = true
		}
	}
	if !byIDs && capShare > 0 && capShare < sizedPageShare {
		// The capsule is a small part of the index: its rows, and those of
		// the filters left to SQL, from sized pages of the index's top.
		// The filter again, its parameters numbered after keywordSized's
		// own two ($1 the query, $2 the page's size).
		kcond, kargs, _ := itemFilter(w, []any{query, 0, capID})
		done, err := s.keywordSized(ctx, query, sizedPage(first, capShare), "k.capsule_id = $3"+itemsWhere(kcond), kargs[2:], fn)
		if err != nil || done {
			return err
		}
		return s.keywordRescored(ctx, capID, query, w, fn)
	}
	for limit := first; ; limit *= 4 {
		// The bound scan order is the index's; a Sort by anything else
		// would score every chunk again.
		args[2] = limit
		rows, err := s.indexScored(ctx, `SELECT k.item_id, k.idx, -bm25_get_current_score() AS s FROM chunks k
			WHERE k.capsule_id = $1`+where+` ORDER BY k.text <@> to_bm25query($2, 'chunks_bm25') LIMIT $3`, args...)
		if err != nil {
			return fmt.Errorf("keyword search: %w", err)
		}
		page, err := collectScored(rows)
		if err != nil {
			return fmt.Errorf("keyword search: %w", err)
		}
		if len(page) == 0 && limit == first {
			if where != "" {
				// No chunk that passes the filter matches (the scan goes on
				// through the filter until LIMIT rows pass or the index is
				// exhausted): the index has lost its state only if it gives
				// nothing unfiltered either.
				var found bool
				if err := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM chunks k WHERE k.capsule_id = $1
					ORDER BY k.text <@> to_bm25query($2, 'chunks_bm25') LIMIT 1)`, capID, query).Scan(&found); err != nil {
					return fmt.Errorf("keyword search: %w", interpret(err))
				}
				if found {
					return nil
				}
			}
			return s.keywordRescored(ctx, capID, query, w, fn)
		}
		// A full page may have cut a group of equal scores short: those wait
		// for the next page, which holds the whole group, in order.
		full, cut := len(page) == limit, len(page)
		for full && cut > 0 && page[cut-1].score == page[len(page)-1].score {
			cut--
		}
		for _, h := range page[:cut] {
			if h.score <= 0 {
				return nil // a plan that sorts every chunk also gives the non-matching ones, last
			}
			if k := (key{h.itemID, h.idx}); !sent[k] {
				sent[k] = true
				if !fn(h.itemID, h.idx, h.score) {
					return nil
				}
			}
		}
		if !full {
			return nil
		}
	}
}

// keywordRescored scores each chunk of the capsule that passes w's item
// filters and holds a word of the query from its text (`<@>`): the answer
// when pg_textsearch's index gives nothing (after a restart with empty
// corpus statistics; see Keyword), and what a query whose words match no
// chunk comes to, cheaply (keywordRescoredSQL).
func (s *CapsuleStore) keywordRescored(ctx context.Context, capID int64, query string, w domain.Wishlist, fn func(itemID string, idx int, score float64) bool) error {
	cond, args, _ := itemFilter(w, []any{capID, query})
	rows, err := s.db.pool.Query(ctx, keywordRescoredSQL(itemsWhere(cond)), args...)
	if err != nil {
		return fmt.Errorf("keyword search: %w", err)
	}
	return streamScored(rows, fn)
}

// anyLexeme is the SQL tsquery that a chunk's tsv matches when it holds any
// word of the text expression q, as pg_textsearch's 'english' index splits
// and stems it (it runs the same to_tsvector over the chunk's text and the
// query): plainto_tsquery's words, ANDed, become ORed. The ' & ' replaced
// is only ever an operator, since a lexeme holds no space. A text of stop
// words only gives an empty query, which matches nothing.
func anyLexeme(q string) string {
	return `replace(plainto_tsquery('english', ` + q + `)::text, ' & ', ' | ')::tsquery`
}

// keywordRescoredSQL is keywordRescored's statement for the item filter
// where (itemsWhere; $1 the capsule, $2 the query). Only the chunks that
// hold a word of the query are scored, found through the tsvector index
// chunks_tsv: a query whose words the capsule lacks (a typo) reads no
// chunk, where scoring every chunk took 285 s at a million chunks. While a
// bulk load has deferred chunks_tsv (DB.DeferIndexes), each chunk's stored
// tsvector is tested instead, which still scores none that lacks the words.
func keywordRescoredSQL(where string) string {
	return `SELECT item_id, idx, s FROM (
		SELECT k.item_id, k.idx, -(k.text <@> to_bm25query($2, 'chunks_bm25')) AS s FROM chunks k
		WHERE k.capsule_id = $1 AND k.tsv @@ ` + anyLexeme("$2") + where + `) m
		WHERE s > 0 ORDER BY s DESC, item_id, idx`
}

// boundsRescored is KeywordBounds's statement when the index gives nothing
// for any term ($1 the capsule, $2 the terms): each term's best score from
// the chunks that hold it (found as keywordRescoredSQL finds them).
var boundsRescored = `SELECT coalesce((SELECT max(-(k.text <@> to_bm25query(t.term, 'chunks_bm25'))) FROM chunks k
		WHERE k.capsule_id = $1 AND k.tsv @@ ` + anyLexeme("t.term") + `), 0)
	FROM unnest($2::text[]) WITH ORDINALITY t(term, n) ORDER BY t.n`

// keywordSized is keywordBM25 over the rows of the index that meet keep
// (an SQL condition on a row aliased k, with columns item_id, idx and
// capsule_id, whose parameters, args, are numbered from $3) when they are a
// small share of the index (sizedPageShare): a filter's items, or a capsule
// among others. Each page is the index's top limit rows, unfiltered, so
// pg_textsearch computes it in one pass, of which the rows that meet keep
// are kept; limit starts at the size that should hold the page wanted
// (sizedPage) and grows fourfold. Rows scoring above the page's last are
// final; those tied with it wait for the next page, which holds their
// whole group. done is false only when the index gave no row at all. The
// page is a subquery in FROM, where pg_textsearch replaces the rescoring of
// its ORDER BY (indexScored); in a CTE it rescored every row, 14,000 rows in
// 8–10 s.
func (s *CapsuleStore) keywordSized(ctx context.Context, query string, limit int, keep string, args []any, fn func(itemID string, idx int, score float64) bool) (done bool, err error) {
	type key struct {
		item string
		idx  int
	}
	sent := map[key]bool{}
	for first := true; ; limit *= 4 {
		// The page's rows that meet keep, and its last row (n = limit)
		// whatever it is: a page holding fewer rows is the index's last.
		rows, err := s.indexScored(ctx, `SELECT item_id, idx, s, n, kept FROM (
				SELECT k.item_id, k.idx, k.s, k.n, (`+keep+`) AS kept FROM (
					SELECT p.*, row_number() OVER () AS n FROM (
						SELECT k.item_id, k.idx, k.capsule_id, -bm25_get_current_score() AS s FROM chunks k
						ORDER BY k.text <@> to_bm25query($1, 'chunks_bm25') LIMIT $2) p) k) x
			WHERE kept OR n = $2`, append([]any{query, limit}, args...)...)
		if err != nil {
			return false, fmt.Errorf("keyword search: %w", err)
		}
		var page []scoredRow
		full, seen := false, false
		var last float64
		for rows.Next() {
			var r scoredRow
			var n int
			var kept bool
			if err := rows.Scan(&r.itemID, &r.idx, &r.score, &n, &kept); err != nil {
				rows.Close()
				return false, fmt.Errorf("keyword search: %w", err)
			}
			seen = true
			if n == limit {
				full, last = true, r.score
			}
			if kept {
				page = append(page, r)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("keyword search: %w", interpret(err))
		}
		if first && !seen {
			// No row of the page passed and the page held fewer rows than
			// asked for: the index may have given nothing at all.
			var found bool
			if err := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM chunks k
				ORDER BY k.text <@> to_bm25query($1, 'chunks_bm25') LIMIT 1)`, query).Scan(&found); err != nil {
				return false, fmt.Errorf("keyword search: %w", interpret(err))
			}
			if !found {
				return false, nil
			}
		}
		first = false
		sortScored(page)
		for _, h := range page {
			if h.score <= 0 || (full && h.score <= last) {
				break
			}
			if k := (key{h.itemID, h.idx}); !sent[k] {
				sent[k] = true
				if !fn(h.itemID, h.idx, h.score) {
					return true, nil
				}
			}
		}
		if !full || last <= 0 {
			return true, nil
		}
	}
}

// indexScored runs query, whose scores are bm25_get_current_score(): the
// BM25 score pg_textsearch's index scan computed for the row it returned
// last (negated: the scan orders by `text <@> query`, lower first). The
// alternative, `-(text <@> query)` in the select list, scores each returned
// row again from its text (re-tokenising it: about 0.4 ms a chunk, 44 ms of
// a hybrid query's 100-candidate keyword page at 5,384 chunks); the index's
// score costs nothing. The two can differ (docs/experiments/postgres.md):
// the index computes in float4, and its segments store a chunk's length
// quantised to a byte (fieldnorms), which pg_textsearch 0.6 can apply
// inexactly after segments merge (up to 1.1% seen on one index). On
// SciFact's 12,098 chunks, in memory and spilled to one segment, the two
// agreed within 2e-7 (relative) and hybrid nDCG@10 was 0.7302 with either
// (#18 allows 0.005). Ties stay deterministic: equal scores are ordered by
// item id, then idx, after the query (collectScored).
//
// bm25_get_current_score() is only right on the index scan: on a plan that
// sorts the chunks by `<@>` instead it returns a stale value. The query runs
// in a batch, one implicit transaction, that first turns sorts and
// sequential scans off locally, so the planner takes the index's ordered
// scan whenever the index exists (without it the query fails, as the exact
// form does).
//
// The plan also computes the ORDER BY expression for each row it returns,
// which is the same rescoring from the text. pg_textsearch's planner hook
// replaces it with bm25_get_current_score() only when the statement was
// parse-analysed right before it is planned (its post-parse hook sets a flag
// the planner hook reads), and only in the main plan tree and subqueries in
// FROM, not in CTEs or subplans. A prepared statement that pgx's statement
// cache plans later, after other statements were parsed, keeps the
// rescoring: at a million chunks a 113-row page took 113–131 ms against 40
// ms with the replacement (PREPARE / EXECUTE against the same statement
// in psql, docs/experiments/postgres.md). So these statements run on
// scanPool, whose connections parse every statement before planning it
// (pgx.QueryExecModeExec: unnamed statements, parameter types taken from the
// Go values, which the statements cast where it matters). Planning with the
// values also shows pg_textsearch the LIMIT: a generic plan's `LIMIT $n` is
// unknown to it, and it then computes its default 1,000 rows and doubles
// from there.
func (s *CapsuleStore) indexScored(ctx context.Context, query string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('enable_sort', 'off', true), set_config('enable_seqscan', 'off', true)`)
	b.Queue(query, args...)
	br := s.db.scanPool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// batchRows is the last query's rows of a batch: closing them closes the
// batch, whose error Err reports after the rows' own.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// scoredRow is one (item_id, idx, score) row.
type scoredRow struct {
	itemID string
	idx    int
	score  float64
}

// collectScored reads (item_id, idx, score) rows, closes them and orders
// them best first, ties by item id, then idx.
func collectScored(rows pgx.Rows) ([]scoredRow, error) {
	defer rows.Close()
	var out []scoredRow
	for rows.Next() {
		var r scoredRow
		if err := rows.Scan(&r.itemID, &r.idx, &r.score); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sortScored(out)
	return out, nil
}

// sortScored orders rows best first, ties by item id, then idx.
func sortScored(rows []scoredRow) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.itemID != b.itemID {
			return a.itemID < b.itemID
		}
		return a.idx < b.idx
	})
}

// ChunkText returns the text of one chunk.
func (s *CapsuleStore) ChunkText(ctx context.Context, itemID string, idx int) (string, error) {
	var text string
	err := s.db.pool.QueryRow(ctx, "SELECT text FROM chunks WHERE item_id = $1 AND idx = $2", itemID, idx).Scan(&text)
	return text, interpret(err)
}

// streamScored hands (item_id, idx, score) rows to fn in order until fn
// returns false, and closes rows.
func streamScored(rows pgx.Rows, fn func(itemID string, idx int, score float64) bool) error {
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

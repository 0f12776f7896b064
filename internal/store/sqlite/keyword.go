package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"capsuled/internal/domain"
)

// itemsPerPart is the fewest items SearchableItems reads on one connection
// when it splits a capsule's items across several.
const itemsPerPart = 20000

// SearchableItems returns the capsule's items that have chunks in the
// index, in id order. A large capsule's items are read in id ranges on up
// to GOMAXPROCS read connections at once: decoding an item's row costs
// about 15 µs, most of a large capsule's cold load (1.9 s for 130,000
// items on one core). Each range is read in its own snapshot, so an item
// written meanwhile is seen in its state before or after the write, never
// twice or not at all.
func (s *CapsuleStore) SearchableItems(ctx context.Context, capsule string) ([]domain.Item, error) {
	return s.searchableItems(ctx, capsule, itemsPerPart, runtime.GOMAXPROCS(0))
}

// searchableItems is SearchableItems in up to maxParts ranges of at least
// perPart items.
func (s *CapsuleStore) searchableItems(ctx context.Context, capsule string, perPart, maxParts int) ([]domain.Item, error) {
	var capID, n int64
	err := s.db.read.QueryRowContext(ctx, "SELECT c.id, (SELECT count(*) FROM items WHERE capsule_id = c.id) FROM capsules c WHERE c.name = ?",
		capsule).Scan(&capID, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("searchable items: %w", interpret(err))
	}
	parts := max(1, min(maxParts, int(n/int64(perPart))))
	// Range k holds the ids from bounds[k-1] (inclusive) to bounds[k];
	// "" stands for no bound.
	bounds := make([]string, parts+1)
	for k := 1; k < parts; k++ {
		if err := s.db.read.QueryRowContext(ctx, "SELECT id FROM items WHERE capsule_id = ? ORDER BY id LIMIT 1 OFFSET ?",
			capID, n*int64(k)/int64(parts)).Scan(&bounds[k]); err != nil {
			return nil, fmt.Errorf("searchable items: %w", interpret(err))
		}
	}
	out := make([][]domain.Item, parts)
	g, gctx := errgroup.WithContext(ctx)
	for k := range parts {
		g.Go(func() error {
			q := "SELECT " + itemColumns + itemFrom + " WHERE i.capsule_id = ? AND i.indexed_hash IS NOT NULL"
			args := []any{capID}
			if lo := bounds[k]; lo != "" {
				q, args = q+" AND i.id >= ?", append(args, lo)
			}
			if hi := bounds[k+1]; hi != "" {
				q, args = q+" AND i.id < ?", append(args, hi)
			}
			rows, err := s.db.read.QueryContext(gctx, q+" ORDER BY i.id", args...)
			if err != nil {
				return fmt.Errorf("searchable items: %w", err)
			}
			out[k], err = collect(rows, scanItem)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(out...), nil
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
// false. Terms are data, never FTS5 syntax: each is quoted.
//
// FTS5 scores every matching row, so what costs is how many rows match and
// what each costs to score. Two things keep that down:
//
//   - When no other capsule has chunks between the capsule's first and last
//     chunk rowid (one capsule, or capsules ingested one after another), the
//     capsule is the rowid range alone, a constraint FTS5 applies in its
//     index. Otherwise the MATCH also requires the capsule's token in the cap
//     column, which costs a scan of that token's whole doclist per query
//     (its IDF) and a second phrase in every row. Either way the cap column
//     has BM25 weight 0, so the scores are the same.
//   - Rows come from FTS5's own rank sorter in pages (ORDER BY rank LIMIT n:
//     only the top n rows are kept and sorted, and only they are looked up
//     in chunks); a consumer that wants more than a page gets the next,
//     larger one.
//
// Equal scores are ordered by item id, then idx (a group of them that a page
// cuts short waits for the next page).
func (s *CapsuleStore) Keyword(ctx context.Context, capsule string, terms []string, fn func(itemID string, idx int, score float64) bool) error {
	return s.KeywordN(ctx, capsule, terms, firstKeywordPage, fn)
}

// KeywordN is Keyword for a caller that expects to need about want hits: the
// first page holds that many (then pages grow fourfold), so a deep consumer
// does not pay for FTS5 scoring every match once per page.
func (s *CapsuleStore) KeywordN(ctx context.Context, capsule string, terms []string, want int, fn func(itemID string, idx int, score float64) bool) error {
	if len(terms) == 0 {
		return nil
	}
	sc, err := s.keywordScope(ctx, capsule)
	if err != nil {
		return err
	}
	if sc.lo == 0 {
		return nil // no chunks
	}
	if ix := s.kwIndexOf(sc); ix != nil {
		if ok, err := s.kwSearch(ctx, ix, terms, nil, want, fn); ok {
			return err
		}
	}
	match := "body : (" + quoteTerms(terms) + ")"
	if !sc.exclusive {
		match = "cap : " + capToken(sc.capID) + " AND " + match
	}
	sent := map[int64]bool{}
	// One more than wanted: a full page holds back its last group of equal
	// scores, so want rows need want+1 unless the last ones tie.
	for limit := max(want, 1) + 1; ; limit *= 4 {
		page, err := s.keywordPage(ctx, match, sc, limit)
		if err != nil {
			return err
		}
		// A full page may have cut a group of equal scores short: those wait
		// for the next page, which holds the whole group, in order.
		full, cut := len(page) == limit, len(page)
		for full && cut > 0 && page[cut-1].score == page[len(page)-1].score {
			cut--
		}
		for _, h := range page[:cut] {
			if sent[h.rowid] {
				continue
			}
			sent[h.rowid] = true
			if !fn(h.itemID, h.idx, h.score) {
				return nil
			}
		}
		if !full {
			return nil // that was every match
		}
	}
}

// KeywordTop is KeywordN for a caller that knows each term's bound, and
// optionally restricted to some items: bounds[i] is the best score terms[i]
// alone reaches in the capsule (KeywordBounds; 0 where it matches nothing),
// and items, when not nil, are the only items whose chunks it returns (the
// capsule's items that pass a filter). It streams the same ranking as
// KeywordN over the terms in TopOrder, less the chunks of other items: the
// same rows, the same scores to the last bit, the same order of ties.
//
// What costs in FTS5 is scoring a row (BM25 reads the row's length from the
// docsize table; the rank sorter sorts every scored row), not finding it:
// walking the matches of common terms unscored is about twenty times
// cheaper. So KeywordTop walks every match of the full query, in the same
// phrase order as KeywordN (so the scores are the same), but scores only the
// candidates, a "+rowid IN" test SQLite applies before it asks for the rank:
//
//   - with items, the chunks of those items (a selective filter scores only
//     the matches that pass it, instead of paging through the unfiltered
//     ranking until enough pass);
//   - without, the rows whose terms' bounds sum to at least θ (MaxScore's
//     bound at the level of the row): FTS5 finds them unscored through an
//     expression of the term sets that reach θ (a term whose bound alone
//     does, or pairs, triples… of lower ones). Any other row scores below
//     θ, so every candidate that scores θ or more ranks exactly where full
//     scoring puts it. θ starts at the best term's bound and falls fourfold
//     while the consumer wants more than the candidates above it; under the
//     lowest bound, every match is a candidate.
//
// A bound lower than the term's true best (a stale one, after a write the
// caller has not seen) can drop rows; callers keep bounds per index state
// (as retrieval.Engine does).
func (s *CapsuleStore) KeywordTop(ctx context.Context, capsule string, terms []string, bounds []float64, items []string, want int, fn func(itemID string, idx int, score float64) bool) error {
	if len(bounds) != len(terms) {
		return fmt.Errorf("keyword top: %d bounds for %d terms", len(bounds), len(terms))
	}
	ts, us := TopOrder(terms, bounds)
	if len(ts) == 0 || (items != nil && len(items) == 0) {
		return nil
	}
	sc, err := s.keywordScope(ctx, capsule)
	if err != nil {
		return err
	}
	if sc.lo == 0 {
		return nil
	}
	if ix := s.kwIndexOf(sc); ix != nil {
		if ok, err := s.kwSearch(ctx, ix, ts, items, want, fn); ok {
			return err
		}
	}
	match := "body : (" + quoteTerms(ts) + ")"
	if !sc.exclusive {
		match = "cap : " + capToken(sc.capID) + " AND " + match
	}
	var itemList string
	if items != nil {
		b, err := json.Marshal(items)
		if err != nil {
			return fmt.Errorf("keyword top: %w", err)
		}
		itemList = string(b)
	}
	theta := 0.0
	if items == nil && len(ts) > 1 {
		theta = us[0]
	}
	sent := map[int64]bool{}
	limit := max(want, 1) + 1
	for {
		cands := ""
		if theta > 0 {
			if cands = candidateMatch(ts, us, theta); cands == "" {
				theta = 0 // every match is a candidate
			}
		}
		page, err := s.keywordCandidates(ctx, match, sc, cands, itemList, limit)
		if err != nil {
			return err
		}
		cut := len(page) == limit
		for _, h := range page {
			if sent[h.rowid] {
				continue
			}
			if h.score < theta || (cut && h.score <= page[limit-1].score) {
				break // sorted: the rest wait too
			}
			sent[h.rowid] = true
			if !fn(h.itemID, h.idx, h.score) {
				return nil
			}
		}
		switch {
		case cut && page[limit-1].score >= theta:
			limit *= 4
		case theta > 0:
			theta /= 4
			if theta < us[len(us)-1] {
				theta = 0
			}
		default:
			return nil // every match was sent
		}
	}
}

// maxClauses bounds the candidate expression of KeywordTop; past it the
// candidates are coarser (still every row that can reach θ).
const maxClauses = 24

// candidateMatch is an FTS5 expression that every row whose terms' bounds
// sum (in order, as FTS5 sums) to θ or more matches: the OR of the minimal
// sets of terms that reach θ, at most maxClauses of them; past that, every
// term of the shortest prefix of ts whose rest cannot reach θ. "" when
// every match is a candidate anyway (each term's bound reaches θ).
func candidateMatch(ts []string, us []float64, theta float64) string {
	n := len(ts)
	if us[n-1] >= theta {
		return ""
	}
	// reach(sum, j): the sum with every term from j on added (monotone:
	// no set that extends the current one past j sums higher).
	reach := func(sum float64, j int) float64 {
		for _, u := range us[j:] {
			sum += u
		}
		return sum
	}
	var clauses [][]int
	visits := 0
	overflow := false
	var walk func(set []int, sum float64, from int)
	walk = func(set []int, sum float64, from int) {
		for j := from; j < n && !overflow; j++ {
			if visits++; visits > 4096 || len(clauses) >= maxClauses {
				overflow = true
				return
			}
			if reach(sum, j) < theta {
				return // neither this term nor any later one gets there
			}
			next := append(set[:len(set):len(set)], j)
			if s := sum + us[j]; s >= theta {
				clauses = append(clauses, next)
			} else {
				walk(next, s, j+1)
			}
		}
	}
	walk(nil, 0, 0)
	var b strings.Builder
	b.WriteString("body : (")
	if overflow {
		// The coarser set: rows that match some term of the shortest prefix
		// whose rest, all of it, stays below θ.
		p := 1
		for p < n && reach(0, p) >= theta {
			p++
		}
		b.WriteString(quoteTerms(ts[:p]))
	} else {
		for i, c := range clauses {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString("(")
			for k, j := range c {
				if k > 0 {
					b.WriteString(" AND ")
				}
				b.WriteString(quoteTerms(ts[j : j+1]))
			}
			b.WriteString(")")
		}
	}
	b.WriteString(")")
	return b.String()
}

// keywordCandidates is keywordPage with the scoring restricted: the best
// limit rows of the MATCH within the scope that also match cands (an FTS5
// expression; "" for any) and belong to the items of itemList (a JSON array;
// "" for any). The "+" keeps SQLite from handing the rowid test to FTS5
// (which would run the MATCH once per rowid), and ordering by -rank (not
// rank) keeps FTS5's own sorter, which scores every match, out of it: SQLite
// asks for the rank of the rows that pass the tests only.
func (s *CapsuleStore) keywordCandidates(ctx context.Context, match string, sc keywordScope, cands, itemList string, limit int) ([]keywordHit, error) {
	var q strings.Builder
	q.WriteString(`SELECT f.rowid, f.s, k.item_id, k.idx FROM (
		SELECT rowid, -rank AS s FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rank MATCH 'bm25(1.0, 0.0)'
		AND rowid BETWEEN ?2 AND ?3`)
	args := []any{match, sc.lo, sc.hi, limit}
	if cands != "" {
		args = append(args, cands)
		fmt.Fprintf(&q, ` AND +rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?%d AND rowid BETWEEN ?2 AND ?3)`, len(args))
	}
	if itemList != "" {
		args = append(args, itemList)
		fmt.Fprintf(&q, ` AND +rowid IN (SELECT id FROM chunks WHERE item_id IN (SELECT value FROM json_each(?%d)))`, len(args))
	}
	q.WriteString(` ORDER BY s DESC LIMIT ?4) f JOIN chunks k ON k.id = f.rowid`)
	rows, err := s.db.read.QueryContext(ctx, q.String(), args...)
	return scanHits(rows, err)
}

// TopOrder is the order of KeywordTop's phrases: the terms that match
// something (bound above 0), by bound, best first, equal bounds in the
// given order; us are their bounds.
func TopOrder(terms []string, bounds []float64) (ts []string, us []float64) {
	idx := make([]int, 0, len(terms))
	for i := range terms {
		if bounds[i] > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return bounds[idx[a]] > bounds[idx[b]] })
	for _, i := range idx {
		ts, us = append(ts, terms[i]), append(us, bounds[i])
	}
	return ts, us
}

// KeywordBounds returns, for each term, the best BM25 score the term alone
// reaches in the capsule (0 where it matches nothing): the query-relative
// keyword bound. One statement answers every term (FTS5 still scores each
// term's matching rows), in the same scope as Keyword. max(-rank), not
// ORDER BY rank LIMIT 1: the same value without FTS5's rank sorter, which
// sorts every scored row (about 40% less CPU for a common term).
func (s *CapsuleStore) KeywordBounds(ctx context.Context, capsule string, terms []string) ([]float64, error) {
	out := make([]float64, len(terms))
	if len(terms) == 0 {
		return out, nil
	}
	sc, err := s.keywordScope(ctx, capsule)
	if err != nil {
		return nil, err
	}
	if sc.lo == 0 {
		return out, nil
	}
	if ix := s.kwIndexOf(sc); ix != nil {
		if got, ok, err := s.kwBounds(ctx, ix, terms); ok || err != nil {
			return got, err
		}
	}
	var q strings.Builder
	args := []any{sc.lo, sc.hi}
	q.WriteString("SELECT ")
	for i, t := range terms {
		match := "body : (" + quoteTerms([]string{t}) + ")"
		if !sc.exclusive {
			match = "cap : " + capToken(sc.capID) + " AND " + match
		}
		args = append(args, match)
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, `coalesce((SELECT max(-rank) FROM chunks_fts WHERE chunks_fts MATCH ?%d AND rank MATCH 'bm25(1.0, 0.0)'
			AND rowid BETWEEN ?1 AND ?2), 0)`, i+3)
	}
	dest := make([]any, len(terms))
	for i := range out {
		dest[i] = &out[i]
	}
	if err := s.db.read.QueryRowContext(ctx, q.String(), args...).Scan(dest...); err != nil {
		return nil, fmt.Errorf("keyword bounds: %w", interpret(err))
	}
	for i := range out {
		out[i] = max(out[i], 0)
	}
	return out, nil
}

// firstKeywordPage is the first page of Keyword: a hybrid query's usual
// depth (100) fits in it.
const firstKeywordPage = 128

// kwIndexOf returns the capsule's in-process keyword index when it has a
// built one (kwIndexes.index) and the database belongs to this process
// alone (no lease: another process's writes would not reach the index).
func (s *CapsuleStore) kwIndexOf(sc keywordScope) *kwIndex {
	if s.lease > 0 || sc.lo == 0 {
		return nil
	}
	return s.db.kw.index(sc.capID, sc.hi-sc.lo+1)
}

// keywordScope is where a capsule's chunks lie among the full-text rows.
type keywordScope struct {
	capID     int64
	lo, hi    int64 // the capsule's first and last chunk rowid; 0 when it has none
	exclusive bool  // no other capsule's chunk lies in [lo, hi]
}

// keywordScope reads the capsule's rowid range through chunks_by_capsule
// (two seeks, and one more per other capsule for exclusivity).
func (s *CapsuleStore) keywordScope(ctx context.Context, capsule string) (keywordScope, error) {
	var sc keywordScope
	var lo, hi sql.NullInt64
	err := s.db.read.QueryRowContext(ctx, `SELECT c.id,
		(SELECT id FROM chunks WHERE capsule_id = c.id ORDER BY id LIMIT 1),
		(SELECT id FROM chunks WHERE capsule_id = c.id ORDER BY id DESC LIMIT 1)
		FROM capsules c WHERE c.name = ?`, capsule).Scan(&sc.capID, &lo, &hi)
	if err != nil {
		return sc, interpret(err)
	}
	if !lo.Valid {
		return sc, nil
	}
	sc.lo, sc.hi = lo.Int64, hi.Int64
	var foreign bool
	err = s.db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM capsules c WHERE c.id != ?1 AND EXISTS (
		SELECT 1 FROM chunks INDEXED BY chunks_by_capsule WHERE capsule_id = c.id AND id BETWEEN ?2 AND ?3))`,
		sc.capID, sc.lo, sc.hi).Scan(&foreign)
	if err != nil {
		return sc, fmt.Errorf("keyword scope: %w", interpret(err))
	}
	sc.exclusive = !foreign
	return sc, nil
}

// keywordHit is one row of a keyword page.
type keywordHit struct {
	rowid  int64
	itemID string
	idx    int
	score  float64
}

// keywordPage returns the best limit rows of the MATCH within the scope's
// rowid range, best first (ties by item id, then idx).
func (s *CapsuleStore) keywordPage(ctx context.Context, match string, sc keywordScope, limit int) ([]keywordHit, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT f.rowid, -f.rank, k.item_id, k.idx FROM (
			SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rank MATCH 'bm25(1.0, 0.0)'
			AND rowid BETWEEN ?2 AND ?3 ORDER BY rank LIMIT ?4) f
		JOIN chunks k ON k.id = f.rowid`, match, sc.lo, sc.hi, limit)
	return scanHits(rows, err)
}

// scanHits reads the rows (rowid, score, item id, idx) of a keyword query
// that returned err, best first (sortHits).
func scanHits(rows *sql.Rows, err error) ([]keywordHit, error) {
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", interpret(err))
	}
	defer rows.Close()
	var page []keywordHit
	for rows.Next() {
		var h keywordHit
		if err := rows.Scan(&h.rowid, &h.score, &h.itemID, &h.idx); err != nil {
			return nil, fmt.Errorf("keyword search: %w", err)
		}
		page = append(page, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("keyword search: %w", interpret(err))
	}
	sortHits(page)
	return page, nil
}

// sortHits orders hits best first, equal scores by item id, then idx.
func sortHits(hs []keywordHit) {
	sort.Slice(hs, func(i, j int) bool {
		a, b := hs[i], hs[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.itemID != b.itemID {
			return a.itemID < b.itemID
		}
		return a.idx < b.idx
	})
}

// quoteTerms ORs the terms, each an FTS5 string (so never syntax).
func quoteTerms(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + strings.ReplaceAll(t, `"`, `""`) + `"`)
	}
	return b.String()
}

// ChunkText returns the text of one chunk.
func (s *CapsuleStore) ChunkText(ctx context.Context, itemID string, idx int) (string, error) {
	var text string
	err := s.db.read.QueryRowContext(ctx, "SELECT text FROM chunks WHERE item_id = ? AND idx = ?", itemID, idx).Scan(&text)
	return text, interpret(err)
}

// ChunkTexts reads several chunks' texts in one statement
// (retrieval.ChunkTexter): one indexed lookup per chunk, joined by UNION ALL
// in groups within SQLite's limit on compound selects.
func (s *CapsuleStore) ChunkTexts(ctx context.Context, itemIDs []string, idxs []int) ([]string, []bool, error) {
	const group = 250
	texts, found := make([]string, len(itemIDs)), make([]bool, len(itemIDs))
	at := make(map[string]int, len(itemIDs))
	key := func(id string, idx int) string { return id + "\x00" + strconv.Itoa(idx) }
	for start := 0; start < len(itemIDs); start += group {
		end := min(start+group, len(itemIDs))
		var q strings.Builder
		args := make([]any, 0, 2*(end-start))
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(" UNION ALL ")
			}
			q.WriteString("SELECT item_id, idx, text FROM chunks WHERE item_id = ? AND idx = ?")
			args = append(args, itemIDs[i], idxs[i])
			at[key(itemIDs[i], idxs[i])] = i
		}
		rows, err := s.db.read.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return nil, nil, interpret(err)
		}
		for rows.Next() {
			var id, text string
			var idx int
			if err := rows.Scan(&id, &idx, &text); err != nil {
				rows.Close()
				return nil, nil, interpret(err)
			}
			if i, ok := at[key(id, idx)]; ok {
				texts[i], found[i] = text, true
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, nil, interpret(err)
		}
	}
	return texts, found, nil
}

func capToken(id int64) string { return "c" + strconv.FormatInt(id, 10) }

package retrieval

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"capsuled/internal/domain"
	"capsuled/internal/terms"
)

// StoreSearcher is a Source that searches a capsule inside the store:
// dense top-k through the store's own vector index and keyword search, each
// with the wishlist's item filters applied in the store's scan. An Engine
// over a StoreSearcher keeps neither vectors nor items in memory: each query
// asks the store for the two candidate lists, then for the candidates' items
// and the cosines of keyword candidates the dense list left out, and fuses,
// scores and orders them exactly as it does over its own index.
//
// A store may apply less than the wishlist's filters, never more: every
// candidate is checked against them in Go (Compile) before it counts, and a
// list that the check shortens is asked for again, deeper. Filters that a
// store translates exactly cost nothing more.
type StoreSearcher interface {
	// DenseTopK returns up to k chunks of the capsule's searchable items
	// that pass (at least) w's item filters, nearest to the unit vector q
	// by cosine similarity, with their cosines, best first. It returns
	// fewer than k only when fewer chunks pass the filters.
	DenseTopK(ctx context.Context, capsule string, q []float32, k int, w domain.Wishlist) ([]Match, error)
	// KeywordWhere is KeywordPager's KeywordN over the chunks of the
	// capsule's items that pass (at least) w's item filters.
	KeywordWhere(ctx context.Context, capsule string, terms []string, want int, w domain.Wishlist, fn func(itemID string, idx int, score float64) bool) error
	// ChunkCosines returns the cosine of q with each chunk (itemIDs[i],
	// idxs[i]) of the capsule; found[i] is false where that chunk has no
	// vector of q's width, or no longer exists.
	ChunkCosines(ctx context.Context, capsule string, q []float32, itemIDs []string, idxs []int) (cosines []float64, found []bool, err error)
	// ItemsByID returns the capsule's searchable items among ids, in any
	// order (ids of others are left out).
	ItemsByID(ctx context.Context, capsule string, ids []string) ([]domain.Item, error)
}

// Match is one chunk found by a StoreSearcher with its cosine.
type Match struct {
	ItemID string
	Idx    int
	Cosine float64
}

// storeSearch is Search over a StoreSearcher (see its documentation); n is
// how many fused hits to hydrate.
func (e *Engine) storeSearch(ctx context.Context, ss StoreSearcher, capsule string, q domain.Query, p plan, n int) ([]domain.Hit, error) {
	if err := e.follow(ctx, capsule); err != nil {
		return nil, err
	}
	pred := Compile(q.Wishlist)
	var (
		dense  []Match
		kw     []Match // score: BM25
		norm   kwNorm
		qvec   []float32
		dItems map[string]*entry
		kItems map[string]*entry
	)
	g, gctx := errgroup.WithContext(ctx)
	if p.mode != domain.ModeSemantic {
		ts := terms.Capsule(q.Text)
		if e.cfg.KeywordNorm != KeywordNormSaturate {
			g.Go(func() (err error) {
				norm, err = e.queryKeywordNorm(gctx, capsule, ts)
				return err
			})
		}
		g.Go(func() (err error) {
			kw, kItems, err = filtered(gctx, ss, capsule, p.depth, pred, func(want int) ([]Match, error) {
				var out []Match
				err := ss.KeywordWhere(gctx, capsule, ts, want, q.Wishlist, func(id string, idx int, score float64) bool {
					out = append(out, Match{id, idx, score})
					return len(out) < want
				})
				if err != nil {
					return nil, fmt.Errorf("keyword search: %w", err)
				}
				return out, nil
			})
			return err
		})
	}
	if p.mode != domain.ModeKeyword {
		g.Go(func() error {
			vs, err := e.emb.Embed(gctx, []string{q.Text})
			if err != nil {
				return fmt.Errorf("embed query: %w", err)
			}
			if len(vs) != 1 || len(vs[0]) != e.dim {
				return errors.New("embed query: wrong vector shape")
			}
			qvec = vs[0]
			dense, dItems, err = filtered(gctx, ss, capsule, p.depth, pred, func(want int) ([]Match, error) {
				ms, err := ss.DenseTopK(gctx, capsule, qvec, want, q.Wishlist)
				if err != nil {
					return nil, fmt.Errorf("dense search: %w", err)
				}
				sort.Slice(ms, func(i, j int) bool { return matchLess(ms[i], ms[j]) })
				return ms, nil
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	cands, err := e.storeMerge(ctx, ss, capsule, qvec, dense, kw, dItems, kItems)
	if err != nil {
		return nil, err
	}
	e.score(cands, p.mode, norm, q.Wishlist.Recency)
	sort.Slice(cands, func(i, j int) bool { return less(cands[i], cands[j]) })
	return e.hydrate(ctx, cands, n, q.Wishlist)
}

// filtered asks fetch for the best want candidates, want = depth at first,
// reads their items and keeps the first depth whose items are searchable and
// pass pred. Where pred rejects some (filters the store could not apply) and
// fetch gave all it was asked for, it asks again for four times as many.
func filtered(ctx context.Context, ss StoreSearcher, capsule string, depth int, pred Predicate, fetch func(want int) ([]Match, error)) ([]Match, map[string]*entry, error) {
	items := map[string]*entry{}
	for want := depth; ; want *= 4 {
		ms, err := fetch(want)
		if err != nil {
			return nil, nil, err
		}
		var ask []string
		asked := map[string]bool{}
		for _, m := range ms {
			if _, ok := items[m.ItemID]; !ok && !asked[m.ItemID] {
				asked[m.ItemID] = true
				ask = append(ask, m.ItemID)
			}
		}
		if len(ask) > 0 {
			its, err := ss.ItemsByID(ctx, capsule, ask)
			if err != nil {
				return nil, nil, fmt.Errorf("search items: %w", err)
			}
			for i := range its {
				items[its[i].ID] = &entry{item: its[i]}
			}
			for _, id := range ask {
				if _, ok := items[id]; !ok {
					items[id] = nil // gone, or not searchable
				}
			}
		}
		kept := ms[:0:0]
		for _, m := range ms {
			if en := items[m.ItemID]; en != nil && (pred == nil || pred(&en.item)) {
				kept = append(kept, m)
			}
		}
		if len(kept) >= depth || len(ms) < want {
			return kept[:min(depth, len(kept))], items, nil
		}
	}
}

// storeMerge joins the two lists as merge does: each chunk once, with its
// rank in each list; keyword candidates the dense list left out get their
// cosines from the store.
func (e *Engine) storeMerge(ctx context.Context, ss StoreSearcher, capsule string, qvec []float32, dense, kw []Match, dItems, kItems map[string]*entry) ([]*cand, error) {
	byRef := map[ref]*cand{}
	var cands []*cand
	for i, m := range dense {
		c := &cand{ref: ref{m.ItemID, m.Idx}, en: dItems[m.ItemID], dense: m.Cosine, hasDense: true, denseRank: i + 1}
		byRef[c.ref] = c
		cands = append(cands, c)
	}
	var ids []string
	var idxs []int
	var need []*cand
	for i, m := range kw {
		r := ref{m.ItemID, m.Idx}
		c := byRef[r]
		if c == nil {
			c = &cand{ref: r, en: kItems[m.ItemID]}
			if en := dItems[m.ItemID]; en != nil {
				c.en = en // one entry per item
			}
			byRef[r] = c
			cands = append(cands, c)
			if qvec != nil {
				ids, idxs, need = append(ids, r.item), append(idxs, r.idx), append(need, c)
			}
		}
		c.bm25, c.keywordRank = m.Cosine, i+1
	}
	if len(need) > 0 {
		cos, found, err := ss.ChunkCosines(ctx, capsule, qvec, ids, idxs)
		if err != nil {
			return nil, fmt.Errorf("chunk cosines: %w", err)
		}
		if len(cos) != len(need) || len(found) != len(need) {
			return nil, fmt.Errorf("chunk cosines: %d for %d chunks", len(cos), len(need))
		}
		for i, c := range need {
			c.dense, c.hasDense = cos[i], found[i]
		}
	}
	return cands, nil
}

// follow clears the keyword bounds cache when the capsule's generation moved
// since this Engine last saw it (another process changed it: BM25's
// statistics moved). A Source that is not Versioned only changes through
// this process, which reports each change.
func (e *Engine) follow(ctx context.Context, capsule string) error {
	v, ok := e.src.(Versioned)
	if !ok {
		return nil
	}
	g, err := v.Generation(ctx, capsule)
	if err != nil {
		return fmt.Errorf("search capsule %s: %w", capsule, err)
	}
	e.mu.Lock()
	old, seen := e.gens[capsule]
	if e.gens == nil {
		e.gens = map[string]int64{}
	}
	e.gens[capsule] = g
	e.mu.Unlock()
	if seen && old != g {
		e.changed()
	}
	return nil
}

// matchLess orders matches best first, ties by item id, then idx.
func matchLess(a, b Match) bool {
	if a.Cosine != b.Cosine {
		return a.Cosine > b.Cosine
	}
	if a.ItemID != b.ItemID {
		return strings.Compare(a.ItemID, b.ItemID) < 0
	}
	return a.Idx < b.Idx
}

package memory

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"capsuled/internal/domain"
	"capsuled/internal/rank"
	"capsuled/internal/terms"
	"capsuled/internal/vecmath"
)

// Mode says which retrievers a selection fuses.
type Mode int

// The selection modes. Hybrid is what the operation uses; the others exist
// for the benchmark's baselines and for callers without an embedder.
const (
	Hybrid    Mode = iota // BM25 and dense (keyword only without an embedder), fused
	DenseOnly             // dense cosine only
	Keyword               // BM25 only
)

// Fusion names how Select combines its retrievers' rankings.
type Fusion string

// The fusions: reciprocal rank (ranks only), a convex mix of each
// retriever's scores min-max normalised over its candidate list, or the
// convex mix of the capsule retrieval core (internal/retrieval): the dense
// cosine (clamped at 0) of every candidate and the BM25 score divided by
// the most the query can score in the namespace (the sum of each term's
// best single-term score).
const (
	FusionRRF    Fusion = "rrf"
	FusionConvex Fusion = "convex"
	FusionCore   Fusion = "core"
)

// rrfK is the rank offset of reciprocal-rank fusion; a first-rank score,
// 1/(rrfK+1), is the unit of the fused score and of every bonus.
const rrfK = rank.DefaultRRFK

// dateSlack widens the span of a date the query names on each side: what
// happened "yesterday" or "last week" is said a little after its date.
const dateSlack = 24 * time.Hour

// A Query asks for the memories that matter for one turn.
type Query struct {
	Namespace string
	// Text is the latest user message.
	Text string
	// Context are the turns before it, oldest first; the most recent
	// Config.ContextTurns of them shape the query.
	Context []string
	// BudgetTokens bounds the packed memory block; 0 means the default and
	// a negative budget packs nothing.
	BudgetTokens int
	// Exclude are ids never to select (for example the turns the request
	// itself carries).
	Exclude map[string]bool
	// ExcludeTurn, when set, leaves out turns the caller already has in its
	// messages.
	ExcludeTurn func(domain.Memory) bool
	Mode        Mode
}

// A Selected memory, with its fused score and its size in the block.
type Selected struct {
	Memory domain.Memory
	Score  float64
	Tokens int
}

// A Selection is the ranked candidates and what fits the budget.
type Selection struct {
	// Ranked are the candidates, best first (at most Config.Candidates).
	Ranked []Selected
	// Packed are the memories of the block: Ranked in order, each taken
	// when it still fits the budget.
	Packed []Selected
	// Tokens is the size of the packed block's lines.
	Tokens int
}

// Select ranks the namespace's live memories for q and packs the budget.
func (s *Service) Select(ctx context.Context, q Query) (Selection, error) {
	return s.selectWith(ctx, q, s.live())
}

// selectWith is Select with the given liveness: it shapes the query text
// (queryText), runs the retrievers at once (retrieve), fuses their rankings
// (fuse), reads the candidates and adds the speaker, date and recency
// bonuses (weigh), orders them (order) and packs the budget.
func (s *Service) selectWith(ctx context.Context, q Query, live domain.LiveFilter) (Selection, error) {
	if err := checkNamespace(q.Namespace); err != nil {
		return Selection{}, err
	}
	budget := q.BudgetTokens
	switch {
	case budget == 0:
		budget = s.cfg.BudgetTokens
	case budget < 0:
		budget = 0 // the caller asked for no memory
	}
	text, cue, hasCue := s.queryText(q)
	r, err := s.retrieve(ctx, q, text, live)
	if err != nil {
		return Selection{}, err
	}
	score := s.fuse(q, r)
	byID, err := s.weigh(ctx, q, text, cue, hasCue, score, live)
	if err != nil {
		return Selection{}, err
	}
	ids := s.order(q, score, byID)
	ranked := make([]Selected, len(ids))
	for i, id := range ids {
		m := byID[id]
		ranked[i] = Selected{Memory: m, Score: score[id], Tokens: s.tok.CountTokens(memoryLine(m))}
	}
	return packed(ranked, budget), nil
}

// queryText is the text the retrievers search for: the query's text, less
// a day or month it names (Config.DateWeight), whose words would only match
// turns that happen to name the month; the date is returned as the cue
// whose turns gain a bonus.
func (s *Service) queryText(q Query) (text string, cue dateCue, hasCue bool) {
	text = strings.TrimSpace(q.Text)
	if q.Mode == Hybrid && s.cfg.DateWeight > 0 {
		if cue, hasCue = findDateCue(text); hasCue && strings.TrimSpace(strings.Trim(cue.Rest, "?.!")) != "" {
			text = cue.Rest
		}
	}
	return text, cue, hasCue
}

// retrieved is what the retrievers found for a selection.
type retrieved struct {
	hits    []domain.MemoryHit // BM25 for the text
	ctxHits []domain.MemoryHit // BM25 for the recent context and the text
	dense   denseResult
	kwMax   float64 // the most the text can score by BM25 (FusionCore)
}

// retrieve runs, at once, the keyword searches, the query embedding with
// its dense scan, and the keyword bound of the core fusion. The first error
// cancels the others' context and is returned.
func (s *Service) retrieve(ctx context.Context, q Query, text string, live domain.LiveFilter) (retrieved, error) {
	var r retrieved
	if text == "" {
		return r, nil
	}
	n := s.cfg.Candidates
	g, gctx := errgroup.WithContext(ctx)
	if q.Mode != Keyword && s.emb != nil {
		g.Go(func() (err error) {
			r.dense, err = s.dense(gctx, q.Namespace, text, n, live)
			return err
		})
	}
	if s.cfg.Fusion == FusionCore && q.Mode == Hybrid {
		g.Go(func() (err error) {
			r.kwMax, err = s.queryMaxBM25(gctx, q.Namespace, text, live)
			return err
		})
	}
	if q.Mode != DenseOnly {
		ctxText := ""
		if k := len(q.Context); k > 0 {
			ctxText = strings.Join(q.Context[max(0, k-s.cfg.ContextTurns):], "\n")
		}
		g.Go(func() (err error) {
			if r.hits, err = s.store.SearchText(gctx, q.Namespace, text, n, live); err != nil {
				return err
			}
			if ctxText != "" {
				r.ctxHits, err = s.store.SearchText(gctx, q.Namespace, ctxText+"\n"+text, n, live)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return retrieved{}, err
	}
	return r, nil
}

// fuse scores the candidates of the retrievers' rankings (ids q excludes
// left out), in units of a first-rank RRF score: with FusionCore the
// capsule retrieval's convex mix (rank.ConvexScore, shared on purpose),
// otherwise each ranking's reciprocal rank (FusionRRF) or min-max
// normalised score (FusionConvex), weighted.
func (s *Service) fuse(q Query, r retrieved) map[string]float64 {
	score := map[string]float64{}
	// add fuses one retriever's ranking: reciprocal rank, or (convex) its
	// scores min-max normalised over its list, in units of a first rank.
	add := func(ids []string, raw []float64, weight float64) {
		lo, hi := 0.0, 0.0
		if s.cfg.Fusion != FusionRRF && len(raw) > 0 {
			lo, hi = raw[len(raw)-1], raw[0]
		}
		for rk, id := range ids {
			if q.Exclude[id] {
				continue
			}
			if hi > lo {
				score[id] += weight / float64(rrfK+1) * (raw[rk] - lo) / (hi - lo)
			} else {
				score[id] += rank.RRF(weight, rrfK, rk+1)
			}
		}
	}
	// join makes ids candidates (FusionCore), scored below.
	join := func(ids []string) {
		for _, id := range ids {
			if _, ok := score[id]; !ok && !q.Exclude[id] {
				score[id] = 0
			}
		}
	}
	core := s.cfg.Fusion == FusionCore && q.Mode == Hybrid
	// kw is each BM25 hit's keyword score (FusionCore).
	kw := map[string]float64{}
	if core {
		for _, h := range r.hits {
			kw[h.ID] = rank.KeywordScore(h.Score, r.kwMax)
		}
		join(hitIDs(r.hits))
	} else {
		add(hitIDs(r.hits), hitScores(r.hits), 1)
	}
	add(hitIDs(r.ctxHits), hitScores(r.ctxHits), 0.3)
	dr := r.dense
	if !core {
		add(dr.ids, dr.sims, s.cfg.DenseWeight)
		return score
	}
	// The retrieval core's convex mix, in units of a first-rank score:
	// (1+DenseWeight)·ConvexScore(alpha) = DenseWeight·cosine + keyword.
	// The dense top n join the candidates, and every candidate gets its
	// cosine, whichever retriever found it.
	alpha := s.cfg.DenseWeight / (1 + s.cfg.DenseWeight)
	fused := func(id string, cos map[string]float64) float64 {
		return (1 + s.cfg.DenseWeight) * rank.ConvexScore(alpha, cos[id], kw[id]) / float64(rrfK+1)
	}
	cos := dr.all // nil without an embedder: keyword only
	if cos != nil {
		join(dr.ids)
		if s.cfg.FeedbackWeight > 0 {
			// Pseudo-relevance feedback: the query vector moves towards
			// the mean of the best three candidates' vectors, and the
			// dense part of every score is taken from the moved vector.
			first := make(map[string]float64, len(score))
			for id, sc := range score {
				first[id] = sc + fused(id, cos)
			}
			fb := scan(s.feedbackQuery(dr, first), dr.stored, s.cfg.Candidates)
			join(fb.ids)
			cos = fb.all
		}
	}
	for id := range score {
		score[id] += fused(id, cos)
	}
	return score
}

// weigh reads the scored candidates, drops those that are not live or that
// q leaves out, and adds the bonuses, in units of a first-rank score: a
// turn said by someone the query names (Config.SpeakerWeight), a memory of
// the date the query names (Config.DateWeight), and recency
// (Config.RecencyWeight). It returns the candidates kept, by id.
func (s *Service) weigh(ctx context.Context, q Query, text string, cue dateCue, hasCue bool, score map[string]float64, live domain.LiveFilter) (map[string]domain.Memory, error) {
	ids := make([]string, 0, len(score))
	for id := range score {
		ids = append(ids, id)
	}
	mems, err := s.store.GetMemories(ctx, q.Namespace, ids)
	if err != nil {
		return nil, err
	}
	now := live.Now
	// Names the query mentions: a turn said by one of them gets the
	// speaker bonus (a question about Ana is most often answered by what
	// Ana said).
	named := map[string]bool{}
	if q.Mode == Hybrid && s.cfg.SpeakerWeight > 0 {
		for _, w := range terms.Words(text) {
			named[w] = true
		}
	}
	byID := map[string]domain.Memory{}
	for _, m := range mems {
		if !isLive(m, live) || (q.ExcludeTurn != nil && q.ExcludeTurn(m)) {
			delete(score, m.ID)
			continue
		}
		byID[m.ID] = m
		if name, _ := m.Metadata["name"].(string); name != "" && len(named) > 0 && m.Kind == domain.MemoryTurn {
			if ws := terms.Words(name); len(ws) > 0 && named[ws[0]] {
				score[m.ID] += s.cfg.SpeakerWeight / float64(rrfK+1)
			}
		}
		if hasCue && !m.ValidFrom.Before(cue.From.Add(-dateSlack)) && m.ValidFrom.Before(cue.To.Add(dateSlack)) {
			score[m.ID] += s.cfg.DateWeight / float64(rrfK+1)
		}
		if q.Mode == Hybrid && s.cfg.RecencyWeight > 0 {
			age := now.Sub(m.ValidFrom)
			if age < 0 {
				age = 0
			}
			score[m.ID] += s.cfg.RecencyWeight / float64(rrfK+1) * math.Exp2(-float64(age)/float64(s.cfg.RecencyHalfLife))
		}
	}
	return byID, nil
}

// order ranks the kept candidates by score (then id), spreads out
// neighbouring turns when Config.NeighbourPenalty asks (diversify), and
// keeps the best Config.Candidates.
func (s *Service) order(q Query, score map[string]float64, byID map[string]domain.Memory) []string {
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sortByScore(ids, score)
	if q.Mode == Hybrid && s.cfg.NeighbourPenalty > 0 {
		ids = s.diversify(ids, score, byID)
	}
	return ids[:min(len(ids), s.cfg.Candidates)]
}

// packed is the selection of ranked: each memory, in order, taken into the
// block while it still fits the budget.
func packed(ranked []Selected, budget int) Selection {
	sel := Selection{Ranked: ranked}
	for _, sm := range ranked {
		if sel.Tokens+sm.Tokens <= budget {
			sel.Packed = append(sel.Packed, sm)
			sel.Tokens += sm.Tokens
		}
	}
	return sel
}

// feedbackQuery is the dense query moved towards the mean vector of the
// best three candidates by score, by Config.FeedbackWeight.
func (s *Service) feedbackQuery(dr denseResult, score map[string]float64) []float32 {
	best := make([]string, 0, len(score))
	for id := range score {
		best = append(best, id)
	}
	sortByScore(best, score)
	byID := make(map[string][]float32, len(dr.stored))
	for _, v := range dr.stored {
		byID[v.ID] = v.Vec
	}
	q := make([]float32, len(dr.qv))
	copy(q, dr.qv)
	for _, id := range best[:min(3, len(best))] {
		for i, x := range byID[id] {
			if i < len(q) {
				q[i] += float32(s.cfg.FeedbackWeight/3) * x
			}
		}
	}
	return q
}

// diversify reorders ids (sorted by score) greedily so that a turn whose
// index window overlaps a turn already taken counts less: each turn is
// indexed with its neighbours (Config.IndexWindow each side), so a match in
// one turn lifts the whole window, and without this the top of the ranking
// is the same few lines several times. A candidate's score is multiplied by
// (1 - Config.NeighbourPenalty) for every taken turn of its window (same
// conversation, at most IndexWindow turns away: turns of a batch are stored
// one millisecond apart). Nothing is dropped, only moved down.
func (s *Service) diversify(ids []string, score map[string]float64, byID map[string]domain.Memory) []string {
	w := time.Duration(s.cfg.IndexWindow) * time.Millisecond
	if s.cfg.IndexAlone {
		return ids
	}
	keep := 1 - s.cfg.NeighbourPenalty
	adj := make([]float64, len(ids))
	for i, id := range ids {
		adj[i] = score[id]
	}
	taken := make([]bool, len(ids))
	out := make([]string, 0, len(ids))
	for range ids {
		best := -1
		for i := range ids {
			if !taken[i] && (best < 0 || adj[i] > adj[best]) {
				best = i
			}
		}
		taken[best] = true
		out = append(out, ids[best])
		b := byID[ids[best]]
		if b.Kind != domain.MemoryTurn {
			continue
		}
		for i := range ids {
			if taken[i] {
				continue
			}
			m := byID[ids[i]]
			if m.Kind != domain.MemoryTurn || m.Conversation != b.Conversation {
				continue
			}
			if d := m.ValidFrom.Sub(b.ValidFrom); d >= -w && d <= w {
				adj[i] *= keep
			}
		}
	}
	return out
}

// queryMaxBM25 is the most a query can score in the namespace
// (FusionCore): the sum of each term's best score alone, a term that
// matches nothing counting as the mean of those that match. Each term's
// best score is cached per namespace until a write to it (or the cache's
// time-to-live), as the retrieval core caches them per capsule.
//
// The terms are the capsule query's (terms.Capsule), not the memory
// search's (terms.Memory) that SearchText uses: a word only the memory
// list stops ("you", "my") finds nothing alone, so it counts as the mean of
// the others and raises the bound a little. The LoCoMo figures were
// measured so (docs/benchmarks.md); aligning the two lists is a ranking
// change to measure, not a refactor.
func (s *Service) queryMaxBM25(ctx context.Context, ns, text string, live domain.LiveFilter) (float64, error) {
	ts := terms.Capsule(text)
	bounds := make([]float64, len(ts))
	for i, t := range ts {
		// The bound depends on which memories count: the key says.
		key := fmt.Sprintf("%t/%t/%s", live.IncludeExpired, live.IncludeSuperseded, t)
		best, gen, ok := s.vectors.bound(ns, key)
		if !ok {
			hits, err := s.store.SearchText(ctx, ns, t, 1, live)
			if err != nil {
				return 0, fmt.Errorf("keyword bound of %q: %w", t, err)
			}
			best = 0
			if len(hits) > 0 {
				best = hits[0].Score
			}
			s.vectors.putBound(ns, gen, key, best)
		}
		bounds[i] = best
	}
	return rank.QueryMaxBM25(bounds), nil
}

// dense ranks the namespace's vectors by cosine similarity to text; it
// returns the best n ids and their similarities, and every id's.
func (s *Service) dense(ctx context.Context, ns, text string, n int, live domain.LiveFilter) (denseResult, error) {
	vecs, err := s.emb.Embed(ctx, []string{text})
	if err != nil {
		return denseResult{}, fmt.Errorf("embed the memory query: %w", err)
	}
	stored, err := s.vectors.get(ctx, s.store, ns, s.emb.ModelID(), live.Now)
	if err != nil {
		return denseResult{}, err
	}
	r := scan(vecs[0], stored, n)
	r.stored = stored
	return r, nil
}

// denseResult is a dense scan: the best n ids and their cosines, every
// id's cosine, the query vector and the vectors scanned.
type denseResult struct {
	ids    []string
	sims   []float64
	all    map[string]float64
	qv     []float32
	stored []domain.MemoryVector
}

// scan ranks stored by cosine similarity to qv: every id's, and the best n
// (rank.TopK, ties by id).
func scan(qv []float32, stored []domain.MemoryVector, n int) denseResult {
	score := make(map[string]float64, len(stored))
	top := rank.NewTopK(n, worseSim)
	for _, v := range stored {
		c := similarity(qv, v.Vec)
		score[v.ID] = c
		top.Offer(sim{v.ID, c})
	}
	best := top.Best()
	ids, sims := make([]string, len(best)), make([]float64, len(best))
	for i, b := range best {
		ids[i], sims[i] = b.id, b.cos
	}
	return denseResult{ids: ids, sims: sims, all: score, qv: qv}
}

// sim is a stored vector's cosine to the query.
type sim struct {
	id  string
	cos float64
}

// worseSim orders as sortByScore does: lower cosine, then the larger id.
func worseSim(a, b sim) bool {
	if a.cos != b.cos {
		return a.cos < b.cos
	}
	return a.id > b.id
}

// similarity is the cosine of the query and a stored vector; a vector of
// another width ranks below every cosine.
func similarity(q, v []float32) float64 {
	if len(q) != len(v) {
		return -1
	}
	return vecmath.Cosine(q, v)
}

func hitScores(hits []domain.MemoryHit) []float64 {
	out := make([]float64, len(hits))
	for i, h := range hits {
		out[i] = h.Score
	}
	return out
}

func hitIDs(hits []domain.MemoryHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// memoryLine is one memory as the block shows it: its date, who said it
// (turns) or its kind, and its text on one line.
func memoryLine(m domain.Memory) string {
	who := string(m.Kind)
	if m.Kind == domain.MemoryTurn {
		who = m.Role
		if name, _ := m.Metadata["name"].(string); name != "" {
			who = name
		}
	}
	return fmt.Sprintf("- [%s] %s: %s", m.ValidFrom.UTC().Format(time.DateOnly), who, oneLine(m.Content))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Pack ranks mems in the given order and packs them into a budget (0: the
// default), as Select does with its own ranking.
func (s *Service) Pack(mems []domain.Memory, budget int) Selection {
	if budget == 0 {
		budget = s.cfg.BudgetTokens
	}
	ranked := make([]Selected, len(mems))
	for i, m := range mems {
		ranked[i] = Selected{Memory: m, Score: rank.RRF(1, rrfK, i+1), Tokens: s.tok.CountTokens(memoryLine(m))}
	}
	return packed(ranked, budget)
}

// isLive applies the filter to a memory (the vector cache holds every
// memory, live or not).
func isLive(m domain.Memory, f domain.LiveFilter) bool {
	if !f.IncludeExpired && m.ExpiresAt != nil && !m.ExpiresAt.After(f.Now) {
		return false
	}
	return f.IncludeSuperseded || m.InvalidFrom == nil
}

package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
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

// rrfK is the rank offset of reciprocal-rank fusion.
const rrfK = 60

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
	n := s.cfg.Candidates
	score := map[string]float64{}
	// add fuses one retriever's ranking: reciprocal rank, or (convex) its
	// scores min-max normalised over its list, in units of a first rank.
	add := func(ids []string, raw []float64, weight float64) {
		lo, hi := 0.0, 0.0
		if s.cfg.Fusion != FusionRRF && len(raw) > 0 {
			lo, hi = raw[len(raw)-1], raw[0]
		}
		for rank, id := range ids {
			if q.Exclude[id] {
				continue
			}
			if hi > lo {
				score[id] += weight / float64(rrfK+1) * (raw[rank] - lo) / (hi - lo)
			} else {
				score[id] += weight / float64(rrfK+rank+1)
			}
		}
	}
	text := strings.TrimSpace(q.Text)
	// A day or month the query names (Config.DateWeight): the turns of that
	// time gain a bonus, and the date leaves the retrieval text, where its
	// words only match turns that happen to name the month.
	var cue dateCue
	hasCue := false
	if q.Mode == Hybrid && s.cfg.DateWeight > 0 {
		if cue, hasCue = findDateCue(text); hasCue && strings.TrimSpace(strings.Trim(cue.Rest, "?.!")) != "" {
			text = cue.Rest
		}
	}
	ctxText := ""
	if k := len(q.Context); k > 0 {
		ctxText = strings.Join(q.Context[max(0, k-s.cfg.ContextTurns):], "\n")
	}
	core := s.cfg.Fusion == FusionCore && q.Mode == Hybrid
	// The query embedding and dense scan, and the keyword bound of the
	// core fusion, run beside the keyword search.
	var (
		wg             sync.WaitGroup
		dr             denseResult
		kwMax          float64
		denseErr, kErr error
	)
	defer wg.Wait()
	if q.Mode != Keyword && s.emb != nil && text != "" {
		wg.Go(func() { dr, denseErr = s.dense(ctx, q.Namespace, text, n, live) })
	}
	if core && text != "" {
		wg.Go(func() { kwMax, kErr = s.queryMaxBM25(ctx, q.Namespace, text, live) })
	}
	var hits, ctxHits []domain.MemoryHit
	if q.Mode != DenseOnly && text != "" {
		var err error
		if hits, err = s.store.SearchText(ctx, q.Namespace, text, n, live); err != nil {
			return Selection{}, err
		}
		if ctxText != "" {
			if ctxHits, err = s.store.SearchText(ctx, q.Namespace, ctxText+"\n"+text, n, live); err != nil {
				return Selection{}, err
			}
		}
	}
	wg.Wait()
	if err := errors.Join(denseErr, kErr); err != nil {
		return Selection{}, err
	}
	// join makes ids candidates (FusionCore), scored below.
	join := func(ids []string) {
		for _, id := range ids {
			if _, ok := score[id]; !ok && !q.Exclude[id] {
				score[id] = 0
			}
		}
	}
	// kw is each BM25 hit's keyword score (FusionCore).
	kw := map[string]float64{}
	if core {
		for _, h := range hits {
			kw[h.ID] = retrieval.KeywordScore(h.Score, kwMax)
		}
		join(hitIDs(hits))
	} else {
		add(hitIDs(hits), hitScores(hits), 1)
	}
	add(hitIDs(ctxHits), hitScores(ctxHits), 0.3)
	if !core {
		add(dr.ids, dr.sims, s.cfg.DenseWeight)
	} else {
		// The retrieval core's convex mix, in units of a first-rank score:
		// (1+DenseWeight)·ConvexScore(alpha) = DenseWeight·cosine + keyword.
		// The dense top n join the candidates, and every candidate gets its
		// cosine, whichever retriever found it.
		alpha := s.cfg.DenseWeight / (1 + s.cfg.DenseWeight)
		fused := func(id string, cos map[string]float64) float64 {
			return (1 + s.cfg.DenseWeight) * retrieval.ConvexScore(alpha, cos[id], kw[id]) / float64(rrfK+1)
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
				fb := scan(s.feedbackQuery(dr, first), dr.stored, n)
				join(fb.ids)
				cos = fb.all
			}
		}
		for id := range score {
			score[id] += fused(id, cos)
		}
	}
	ids := make([]string, 0, len(score))
	for id := range score {
		ids = append(ids, id)
	}
	mems, err := s.store.GetMemories(ctx, q.Namespace, ids)
	if err != nil {
		return Selection{}, err
	}
	now := live.Now
	// Names the query mentions: a turn said by one of them gets the
	// speaker bonus (a question about Ana is most often answered by what
	// Ana said).
	named := map[string]bool{}
	if q.Mode == Hybrid && s.cfg.SpeakerWeight > 0 {
		for _, w := range words(text) {
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
			if ws := words(name); len(ws) > 0 && named[ws[0]] {
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
	ids = ids[:0]
	for id := range byID {
		ids = append(ids, id)
	}
	sortByScore(ids, score)
	if q.Mode == Hybrid && s.cfg.NeighbourPenalty > 0 {
		ids = s.diversify(ids, score, byID)
	}
	if len(ids) > n {
		ids = ids[:n]
	}
	var sel Selection
	for _, id := range ids {
		m := byID[id]
		sm := Selected{Memory: m, Score: score[id], Tokens: s.tok.CountTokens(memoryLine(m))}
		sel.Ranked = append(sel.Ranked, sm)
		if sel.Tokens+sm.Tokens <= budget {
			sel.Packed = append(sel.Packed, sm)
			sel.Tokens += sm.Tokens
		}
	}
	return sel, nil
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
func (s *Service) queryMaxBM25(ctx context.Context, ns, text string, live domain.LiveFilter) (float64, error) {
	terms := retrieval.Terms(text)
	bounds := make([]float64, len(terms))
	for i, t := range terms {
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
	return retrieval.QueryMaxBM25(bounds), nil
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

// scan ranks stored by cosine similarity to qv.
func scan(qv []float32, stored []domain.MemoryVector, n int) denseResult {
	score := make(map[string]float64, len(stored))
	ids := make([]string, 0, len(stored))
	for _, v := range stored {
		score[v.ID] = cosine(qv, v.Vec)
		ids = append(ids, v.ID)
	}
	sortByScore(ids, score)
	if len(ids) > n {
		ids = ids[:n]
	}
	sims := make([]float64, len(ids))
	for i, id := range ids {
		sims[i] = score[id]
	}
	return denseResult{ids: ids, sims: sims, all: score, qv: qv}
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return -1
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
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
	var sel Selection
	for i, m := range mems {
		sm := Selected{Memory: m, Score: 1 / float64(rrfK+i+1), Tokens: s.tok.CountTokens(memoryLine(m))}
		sel.Ranked = append(sel.Ranked, sm)
		if sel.Tokens+sm.Tokens <= budget {
			sel.Packed = append(sel.Packed, sm)
			sel.Tokens += sm.Tokens
		}
	}
	return sel
}

// isLive applies the filter to a memory (the vector cache holds every
// memory, live or not).
func isLive(m domain.Memory, f domain.LiveFilter) bool {
	if !f.IncludeExpired && m.ExpiresAt != nil && !m.ExpiresAt.After(f.Now) {
		return false
	}
	return f.IncludeSuperseded || m.InvalidFrom == nil
}

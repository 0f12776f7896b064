package retrieval

import (
	"context"
	"math"
	"slices"
)

// Defaults of the graph index (see the package documentation).
const (
	DefaultGraphMin = 100000
	DefaultGraphEf  = 256
)

// graphEfBase is the capsule size up to which the default beam width is
// DefaultGraphEf. On bench scale's vectors recall@10 against exact at
// 132,809 chunks was 0.775 / 0.88 / 0.96 at widths 64 / 128 / 256, and at
// 1,083,249 chunks 0.885 at 256: a graph eight times larger needed twice
// the width for the same recall, so the width grows with the cube root of
// the capsule beyond it (512 at a million; docs/benchmarks.md).
const graphEfBase = 125000

// GraphEfFor is the default beam width of a graph search in a capsule of
// chunks chunks: DefaultGraphEf·∛(chunks/graphEfBase), at least
// DefaultGraphEf.
func GraphEfFor(chunks int) int {
	return max(DefaultGraphEf, int(math.Round(DefaultGraphEf*math.Cbrt(float64(chunks)/graphEfBase))))
}

// defaultGraphCost is about how many nodes an unfiltered graph search scores, the
// unit of the filter cut-off: a filter passing a share s of a capsule's
// chunks makes the graph search score about graphCost/s nodes (most fail the
// filter) while the scan scores s·chunks, so the graph is used when
// s·chunks > graphCost/s.
const defaultGraphCost = 16384

// graphBuild is a graph being built in the background; pending names the
// items changed since its entries were taken, applied when it is installed.
type graphBuild struct {
	cancel  context.CancelFunc
	pending map[string]bool
	done    chan struct{}
}

// Close stops the background graph builds and vectors file checks and waits
// for them to end, then writes the graphs and vectors files changed since
// they were last written to Config.GraphDir.
// The Engine still answers queries afterwards, by scanning.
func (e *Engine) Close() {
	e.stop()
	e.builds.Wait()
	e.mu.Lock()
	cis := make([]*capIndex, 0, len(e.index))
	for _, ci := range e.index {
		cis = append(cis, ci)
	}
	e.mu.Unlock()
	for _, ci := range cis {
		e.saveGraph(ci)
		ci.mu.Lock()
		due := ci.vecFile && ci.loaded && ci.vecSaved != ci.vecEdits
		ci.mu.Unlock()
		if due {
			e.saveVectors(ci)
		}
	}
}

// saveGraph writes the capsule's graph to its file in Config.GraphDir if it
// changed since it was last written or read. A failure only costs the next
// run a build: the service goes on.
func (e *Engine) saveGraph(ci *capIndex) {
	if e.cfg.GraphDir == "" {
		return
	}
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	g := ci.graph
	if g == nil || g.saved.Load() == g.edits {
		return
	}
	if err := g.save(GraphPath(e.cfg.GraphDir, ci.name)); err == nil {
		g.saved.Store(g.edits)
	}
}

// loadOrBuild returns the capsule's graph read from its file where one
// matches enough of ens (ids beside them), else built.
func (e *Engine) loadOrBuild(ctx context.Context, name string, fromFile bool, ids []string, ens []*entry) (*graph, error) {
	if fromFile && e.cfg.GraphDir != "" {
		g, err := loadGraph(ctx, GraphPath(e.cfg.GraphDir, name), e.dim, ids, ens)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil && 4*g.dead < len(g.nodes) {
			if g.edits == 0 {
				g.saved.Store(0) // as on disk
			}
			g.read = true
			return g, nil
		}
	}
	workers := 1
	if len(ens) > 0 && e.cfg.GraphWorkers > 1 {
		workers = e.cfg.GraphWorkers
	}
	g, err := buildGraph(ctx, e.dim, ids, ens, workers)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// graphChanged keeps the capsule's graph current after item id changed
// (indexed anew, or removed: ci.items holds its entry, or none), and starts
// a build where one is due. Callers hold ci.mu for writing.
func (e *Engine) graphChanged(ci *capIndex, id string) {
	if g := ci.graph; g != nil {
		g.removeItem(id)
		if en := ci.items[id]; en != nil {
			g.addEntry(id, en)
		}
	}
	if ci.chunks < e.cfg.GraphMin/2 {
		ci.stopGraph() // small again: the scan serves, and the memory goes
	}
	if ci.build != nil {
		ci.build.pending[id] = true
	}
	e.maybeBuild(ci)
}

// maybeBuild starts building the capsule's graph in the background when it
// has at least GraphMin chunks and no graph, or a graph a quarter of whose
// nodes are dead; until the build ends the scan (or the old graph) serves.
// Callers hold ci.mu for writing.
func (e *Engine) maybeBuild(ci *capIndex) {
	if e.emb == nil || e.cfg.GraphMin <= 0 || ci.chunks < e.cfg.GraphMin || ci.build != nil {
		return
	}
	if g := ci.graph; g != nil && 4*g.dead < len(g.nodes) {
		return
	}
	fromFile := ci.graph == nil // a rebuild drops the dead nodes the file has too
	list, _ := ci.snapshot()
	ens := slices.Clone(list) // put and drop change ci.list in place
	ids := make([]string, len(ens))
	for i, en := range ens {
		ids[i] = en.item.ID
	}
	ctx, cancel := context.WithCancel(e.life)
	b := &graphBuild{cancel: cancel, pending: map[string]bool{}, done: make(chan struct{})}
	ci.build = b
	e.builds.Add(1)
	go func() {
		defer e.builds.Done()
		defer close(b.done)
		defer cancel()
		g, err := e.loadOrBuild(ctx, ci.name, fromFile, ids, ens)
		if err != nil {
			return
		}
		if !e.install(ci, b, g) {
			return
		}
		e.saveGraph(ci)
	}()
}

// install makes g, the result of build b, the capsule's graph, after
// applying the changes made meanwhile; false when b was stopped.
func (e *Engine) install(ci *capIndex, b *graphBuild, g *graph) bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.build != b {
		return false // stopped meanwhile
	}
	changed := make([]string, 0, len(b.pending))
	for id := range b.pending {
		changed = append(changed, id)
	}
	slices.Sort(changed)
	for _, id := range changed {
		g.removeItem(id)
		if en := ci.items[id]; en != nil {
			g.addEntry(id, en)
		}
	}
	ci.graph, ci.build = g, nil
	return true
}

// stopGraph drops the capsule's graph and cancels its build; callers hold
// ci.mu for writing.
func (ci *capIndex) stopGraph() {
	if ci.build != nil {
		ci.build.cancel()
		ci.build = nil
	}
	ci.graph = nil
}

// denseSearch is the capsule's dense top k: through its graph where it has
// one (it has at least GraphMin/2 chunks then) and pred passes enough of
// them, else the scan (denseTopK). Either way the scores are the exact cosines and ties
// break as in the scan. Callers hold ci.mu for reading.
func (e *Engine) denseSearch(ci *capIndex, q []float32, k int, pred Predicate, acc *accepted) []*cand {
	g := ci.graph
	if g == nil {
		return e.scan(ci, q, k, pred, acc)
	}
	ef := e.cfg.GraphEf
	if ef <= 0 {
		ef = GraphEfFor(ci.chunks)
	}
	ef = max(ef, k)
	accept := func(id uint32) bool { return !g.nodes[id].dead }
	maxVisit := 0
	if pred != nil {
		var share float64
		if acc != nil {
			share = float64(acc.chunks) / float64(max(ci.chunks, 1))
		} else {
			list, _ := ci.snapshot()
			share = passShare(list, pred)
		}
		if share*float64(ci.chunks) <= float64(e.graphCost)/max(share, 1e-9) {
			return e.scan(ci, q, k, pred, acc)
		}
		accept = func(id uint32) bool { n := &g.nodes[id]; return !n.dead && pred(&n.en.item) }
		maxVisit = int(4 * float64(e.graphCost) / share)
	}
	res, complete := g.search(q, ef, accept, maxVisit)
	if !complete {
		// The filter passed fewer chunks near q than estimated: scan.
		return e.scan(ci, q, k, pred, acc)
	}
	all := make([]scored, len(res))
	for j, c := range res {
		n := &g.nodes[c.id]
		all[j] = scored{c.s, n.en, int(n.i)}
	}
	return topCands(all, k)
}

// scan is the capsule's dense top k by scan: over acc's entries alone,
// exactly, where a filter's accepted set is known and about as small as
// what each worker of the approximate scan scores exactly (which then
// scores all of it: the same chunks, scores and ties), else denseTopK,
// which asks pred of every item.
func (e *Engine) scan(ci *capIndex, q []float32, k int, pred Predicate, acc *accepted) []*cand {
	if acc != nil && acc.chunks <= max(e.cfg.ApproxRerank, ci.chunks/ci.workers()/approxRerankShare, minChunksPerWorker) {
		return topCands(exactScan(acc.ens, q, e.dim, k, nil), k)
	}
	return denseTopK(ci, q, e.dim, k, pred, e.cfg.ApproxMin, e.cfg.ApproxRerank)
}

// topCands sorts scan or graph results best first (cosine, then ref) and
// keeps the first k as candidates.
func topCands(all []scored, k int) []*cand {
	sortScored(all)
	all = all[:min(k, len(all))]
	out := make([]*cand, len(all))
	for i, c := range all {
		out[i] = &cand{ref: c.ref(), en: c.en, dense: float64(c.s), hasDense: true}
	}
	return out
}

// passShare estimates the share of the capsule's chunks whose items pred
// accepts from at most 256 entries spread evenly over list.
func passShare(list []*entry, pred Predicate) float64 {
	if len(list) == 0 {
		return 0
	}
	step := max(1, len(list)/256)
	pass, all := 0, 0
	for i := 0; i < len(list); i += step {
		en := list[i]
		all += len(en.idxs)
		if pred(&en.item) {
			pass += len(en.idxs)
		}
	}
	return float64(pass) / float64(max(all, 1))
}

// GraphRead reports whether the capsule's graph was read from its file
// (false: built, or none): a file that holds too few of the capsule's
// chunks, or is damaged, is left for a fresh build.
func (e *Engine) GraphRead(capsule string) bool {
	ci := e.capsule(capsule)
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	return ci.graph != nil && ci.graph.read
}

// GraphReady waits until the capsule's graph build, if one is running, has
// ended (installed, or stopped), or ctx is done. Benchmarks call it so as to
// measure the graph rather than the scan that serves meanwhile.
func (e *Engine) GraphReady(ctx context.Context, capsule string) error {
	ci := e.capsule(capsule)
	ci.mu.RLock()
	var done chan struct{}
	if ci.build != nil {
		done = ci.build.done
	}
	ci.mu.RUnlock()
	return waitClosed(ctx, done)
}

// waitClosed waits until done is closed (at once when nil) or ctx is done.
func waitClosed(ctx context.Context, done <-chan struct{}) error {
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

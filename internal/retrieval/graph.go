package retrieval

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"capsuled/internal/vecmath"
)

// graph is a hierarchical navigable small-world graph (HNSW, Malkov and
// Yashunin 2016) over a capsule's chunk vectors: the dense search of large
// capsules. It stores no vector: a node names its chunk by entry and row,
// so the vectors are the flat index's own (one copy in memory). A node is
// 4·(2·graphM) bytes of level-0 links plus about 40 bytes and its item's
// map entry: 18.6 MiB per 100,000 chunks measured at graphM 16.
//
// It is the project's own rather than a library's: github.com/coder/hnsw
// v0.6.1, the maintained Go candidate, found recall@10 0.036 against exact
// on BenchmarkDenseGraph's 100,000 vectors at every ef (its layer search
// stops at the first expansion that does not improve its best result), has
// no filtered search, and keeps neighbours in maps (93.6 MiB per 100,000
// chunks besides the vectors).
//
// Removing an item only marks its nodes dead: they keep routing searches and
// are never returned; the capsule index rebuilds the graph once a quarter of
// its nodes are dead. A graph is not safe for concurrent use by itself: the
// capsule's lock serialises writes (insert, removeItem) against searches,
// which may run concurrently with each other.
type graph struct {
	dim    int
	nodes  []gnode
	links0 []uint32 // level-0 links, graphM0 slots per node (gnode.n0 used)
	entry  int32    // the entry point, -1 while empty
	top    int      // the entry point's level
	dead   int
	first  map[string]uint32 // item id → its first node; its chunks' nodes follow
	edits  uint64            // insertions and removals so far
	saved  atomic.Uint64     // edits when last written to or read from its file
	read   bool              // read from its file (false: built)
	rng    *rand.Rand
	seen   sync.Pool // *visitSet

	// During a parallel build (buildGraph): one lock per node, guarding its
	// links, and entryMu guarding entry and top; nil and unused otherwise.
	locks   []sync.Mutex
	entryMu sync.Mutex
}

// gnode is one chunk: row i of en's vectors.
type gnode struct {
	en    *entry
	i     int32
	level uint8
	n0    uint8
	dead  bool
	up    [][]uint32 // up[l-1]: the links at level l ≥ 1
}

// Graph parameters: graphM links per node above level 0, twice that at
// level 0, graphEfBuild candidates when inserting. Measured on
// BenchmarkDenseGraph's vectors (docs/benchmarks.md).
const (
	graphM       = 16
	graphM0      = 2 * graphM
	graphEfBuild = 100
)

// visitSet marks the nodes one search has visited: mark[id] == gen.
type visitSet struct {
	mark []uint32
	gen  uint32
}

func newGraph(dim int) *graph {
	return &graph{dim: dim, entry: -1, first: map[string]uint32{}, rng: rand.New(rand.NewPCG(1, 2))}
}

func (g *graph) vec(id uint32) []float32 {
	n := &g.nodes[id]
	return n.en.vecs[int(n.i)*g.dim : (int(n.i)+1)*g.dim]
}

// links returns node id's links at level l (a view; at level 0 of its
// graphM0 slots).
func (g *graph) links(id uint32, l int) []uint32 {
	if l == 0 {
		return g.links0[int(id)*graphM0 : int(id)*graphM0+int(g.nodes[id].n0)]
	}
	return g.nodes[id].up[l-1]
}

// neighbours is links(id, l), copied into buf under the node's lock
// during a parallel build (another worker may be changing them), else the
// links themselves.
func (g *graph) neighbours(id uint32, l int, buf *[graphM0]uint32) []uint32 {
	if g.locks == nil {
		return g.links(id, l)
	}
	g.locks[id].Lock()
	n := copy(buf[:], g.links(id, l))
	g.locks[id].Unlock()
	return buf[:n]
}

func (g *graph) lock(id uint32) {
	if g.locks != nil {
		g.locks[id].Lock()
	}
}

func (g *graph) unlock(id uint32) {
	if g.locks != nil {
		g.locks[id].Unlock()
	}
}

func (g *graph) setLinks(id uint32, l int, ls []uint32) {
	g.lock(id)
	defer g.unlock(id)
	if l == 0 {
		copy(g.links0[int(id)*graphM0:], ls)
		g.nodes[id].n0 = uint8(len(ls))
		return
	}
	g.nodes[id].up[l-1] = append(g.nodes[id].up[l-1][:0], ls...)
}

// live is the number of nodes not marked dead.
func (g *graph) live() int { return len(g.nodes) - g.dead }

// addEntry inserts every chunk of en, the entry of item id (which must not
// be in the graph alive: removeItem first).
func (g *graph) addEntry(id string, en *entry) {
	if len(en.idxs) == 0 {
		return
	}
	g.edits++
	g.first[id] = uint32(len(g.nodes))
	for i := range en.idxs {
		g.insert(en, i)
	}
}

// removeItem marks the nodes of item id dead.
func (g *graph) removeItem(id string) {
	f, ok := g.first[id]
	if !ok {
		return
	}
	delete(g.first, id)
	g.edits++
	en := g.nodes[f].en
	for j := range en.idxs {
		if !g.nodes[int(f)+j].dead {
			g.nodes[int(f)+j].dead = true
			g.dead++
		}
	}
}

// insert adds row i of en as a node.
func (g *graph) insert(en *entry, i int) {
	g.place(g.addNode(en, i))
}

// addNode appends row i of en as a node of a random level, not yet linked
// (no search reaches it until place links it).
func (g *graph) addNode(en *entry, i int) uint32 {
	level := int(-math.Log(1-g.rng.Float64()) / math.Log(graphM))
	level = min(level, 30)
	id := uint32(len(g.nodes))
	n := gnode{en: en, i: int32(i), level: uint8(level)}
	if level > 0 {
		n.up = make([][]uint32, level)
		for l := range n.up {
			n.up[l] = make([]uint32, 0, graphM)
		}
	}
	g.nodes = append(g.nodes, n)
	g.links0 = append(g.links0, make([]uint32, graphM0)...)
	return id
}

// place links node id into the graph: HNSW's insertion. During a parallel
// build several run at once, each node's links under its lock.
func (g *graph) place(id uint32) {
	level := int(g.nodes[id].level)
	g.entryMu.Lock()
	entry, top := g.entry, g.top
	if entry < 0 {
		g.entry, g.top = int32(id), level
		g.entryMu.Unlock()
		return
	}
	g.entryMu.Unlock()
	q := g.vec(id)
	ep := uint32(entry)
	epS := vecmath.Dot(q, g.vec(ep))
	for l := top; l > level; l-- {
		ep, epS = g.greedy(q, ep, epS, l)
	}
	vs := g.visits()
	defer g.seen.Put(vs)
	for l := min(level, top); l >= 0; l-- {
		cands := g.searchLayer(q, ep, epS, graphEfBuild, l, vs, nil, 0)
		maxL := graphM
		if l == 0 {
			maxL = graphM0
		}
		sel := g.selectNeighbours(cands, graphM)
		ls := make([]uint32, len(sel))
		for j, c := range sel {
			ls[j] = c.id
		}
		g.setLinks(id, l, ls)
		for _, c := range sel {
			g.link(c.id, id, c.s, l, maxL)
		}
		ep, epS = cands[0].id, cands[0].s
	}
	if level > top {
		g.entryMu.Lock()
		if level > g.top {
			g.entry, g.top = int32(id), level
		}
		g.entryMu.Unlock()
	}
}

// link adds a link from node a to node b (cosine s) at level l, keeping at
// most maxL links chosen by the neighbour heuristic.
func (g *graph) link(a, b uint32, s float32, l, maxL int) {
	g.lock(a)
	defer g.unlock(a)
	ls := g.links(a, l)
	if len(ls) < maxL {
		if l == 0 {
			g.links0[int(a)*graphM0+len(ls)] = b
			g.nodes[a].n0++
		} else {
			g.nodes[a].up[l-1] = append(g.nodes[a].up[l-1], b)
		}
		return
	}
	// Full: b replaces the farthest link if it is nearer. HNSW's neighbour
	// heuristic here as well cost 1.7 times the build time for the same
	// recall@10 (10,000 of BenchmarkDenseGraph's vectors: 0.946 and 0.948
	// at ef 128, 0.985 and 0.986 at ef 256).
	va := g.vec(a)
	worst, worstS := -1, s
	for j, x := range ls {
		if xs := vecmath.Dot(va, g.vec(x)); xs < worstS {
			worst, worstS = j, xs
		}
	}
	if worst >= 0 {
		ls[worst] = b
	}
}

// selectNeighbours is HNSW's neighbour heuristic over cands (best first,
// cosines to the new node): a candidate is kept unless a kept one is closer
// to it than the new node is, so links spread across directions rather than
// crowd into one cluster; up to m are kept, topped up with the nearest
// pruned ones.
func (g *graph) selectNeighbours(cands []gcand, m int) []gcand {
	if len(cands) <= m {
		return cands
	}
	kept := make([]gcand, 0, m)
	var pruned []gcand
	for _, c := range cands {
		if len(kept) >= m {
			break
		}
		vc := g.vec(c.id)
		ok := true
		for _, k := range kept {
			if vecmath.Dot(vc, g.vec(k.id)) > c.s {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	for _, c := range pruned {
		if len(kept) >= m {
			break
		}
		kept = append(kept, c)
	}
	return kept
}

// greedy walks level l from ep to the node nearest q reachable by always
// moving closer.
func (g *graph) greedy(q []float32, ep uint32, epS float32, l int) (uint32, float32) {
	var buf [graphM0]uint32
	for moved := true; moved; {
		moved = false
		for _, x := range g.neighbours(ep, l, &buf) {
			if s := vecmath.Dot(q, g.vec(x)); s > epS {
				ep, epS, moved = x, s, true
			}
		}
	}
	return ep, epS
}

// gcand is a node and its cosine to the query.
type gcand struct {
	s  float32
	id uint32
}

// searchLayer is HNSW's beam search of level l from ep: it returns up to ef
// nodes that accept takes (nil: all), best first. Every node routes the
// search, accepted or not; with an accept filter the search goes on until
// ef accepted nodes are found and no candidate can improve them, or
// maxVisit nodes (0: no limit) have been scored.
func (g *graph) searchLayer(q []float32, ep uint32, epS float32, ef, l int, vs *visitSet, accept func(uint32) bool, maxVisit int) []gcand {
	vs.next(len(g.nodes))
	vs.mark[ep] = vs.gen
	var cand, res gheap // cand: max-heap (best on top); res: min-heap (worst on top)
	cand.push(gcand{epS, ep}, true)
	if accept == nil || accept(ep) {
		res.push(gcand{epS, ep}, false)
	}
	visited := 1
	var buf [graphM0]uint32
	for len(cand) > 0 {
		c := cand.pop(true)
		if len(res) >= ef && c.s < res[0].s {
			break
		}
		if maxVisit > 0 && visited >= maxVisit {
			break
		}
		for _, x := range g.neighbours(c.id, l, &buf) {
			if vs.mark[x] == vs.gen {
				continue
			}
			vs.mark[x] = vs.gen
			visited++
			s := vecmath.Dot(q, g.vec(x))
			if len(res) < ef || s > res[0].s {
				cand.push(gcand{s, x}, true)
				if accept == nil || accept(x) {
					res.push(gcand{s, x}, false)
					if len(res) > ef {
						res.pop(false)
					}
				}
			}
		}
	}
	out := []gcand(res)
	sortBestFirst(out)
	return out
}

func (g *graph) visits() *visitSet {
	vs, _ := g.seen.Get().(*visitSet)
	if vs == nil {
		vs = &visitSet{}
	}
	return vs
}

// next starts a new search over n nodes.
func (vs *visitSet) next(n int) {
	if len(vs.mark) < n {
		vs.mark = append(vs.mark, make([]uint32, n-len(vs.mark))...)
	}
	vs.gen++
	if vs.gen == 0 { // wrapped: clear the marks
		clear(vs.mark)
		vs.gen = 1
	}
}

// search returns up to ef nodes nearest q that accept takes, best first
// (cosines), and whether the search ended by itself rather than at maxVisit.
func (g *graph) search(q []float32, ef int, accept func(uint32) bool, maxVisit int) ([]gcand, bool) {
	if g.entry < 0 {
		return nil, true
	}
	ep := uint32(g.entry)
	epS := vecmath.Dot(q, g.vec(ep))
	for l := g.top; l > 0; l-- {
		ep, epS = g.greedy(q, ep, epS, l)
	}
	vs := g.visits()
	defer g.seen.Put(vs)
	res := g.searchLayer(q, ep, epS, ef, 0, vs, accept, maxVisit)
	return res, len(res) >= ef
}

// gheap is a binary heap of candidates: a max-heap by cosine when max, else
// a min-heap (each use passes the same max).
type gheap []gcand

func (h *gheap) push(c gcand, max bool) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !above(a[i], a[p], max) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *gheap) pop(max bool) gcand {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(a) && above(a[l], a[m], max) {
			m = l
		}
		if r := l + 1; r < len(a) && above(a[r], a[m], max) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// above reports whether a belongs above b in the heap; ties by id, so the
// order is total.
func above(a, b gcand, max bool) bool {
	if a.s != b.s {
		return (a.s > b.s) == max
	}
	return (a.id < b.id) == max
}

func sortBestFirst(cs []gcand) {
	slices.SortFunc(cs, func(a, b gcand) int {
		if above(a, b, true) {
			return -1
		}
		if above(b, a, true) {
			return 1
		}
		return 0
	})
}

// buildGraph builds a graph of the given entries (their item ids beside
// them), in order, on up to workers goroutines; it stops with ctx's error
// when ctx is done. Every node is laid out first, its level drawn in order,
// then linked (place): on one goroutine exactly as inserting the entries one
// by one would; on several (HNSW's usual parallel construction) each node's
// links are guarded by its own lock and the graph depends on the order in
// which the workers ran, its recall not (BenchmarkDenseGraph).
func buildGraph(ctx context.Context, dim int, ids []string, ens []*entry, workers int) (*graph, error) {
	g := newGraph(dim)
	total := 0
	for _, en := range ens {
		total += len(en.idxs)
	}
	g.nodes = make([]gnode, 0, total)
	g.links0 = make([]uint32, 0, total*graphM0)
	for j, en := range ens {
		if len(en.idxs) == 0 {
			continue
		}
		g.edits++
		g.first[ids[j]] = uint32(len(g.nodes))
		for i := range en.idxs {
			g.addNode(en, i)
		}
	}
	if workers <= 1 || total < 2 {
		for id := range g.nodes {
			if id%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			g.place(uint32(id))
		}
		return g, nil
	}
	g.locks = make([]sync.Mutex, total)
	defer func() { g.locks = nil }()
	g.place(0)
	var next atomic.Int64
	next.Store(1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				id := next.Add(1) - 1
				if id >= int64(total) || (id%1024 == 0 && ctx.Err() != nil) {
					return
				}
				g.place(uint32(id))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

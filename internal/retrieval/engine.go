package retrieval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"capsuled/internal/domain"
	"capsuled/internal/rank"
	"capsuled/internal/terms"
	"capsuled/internal/vecmath"
)

// Source is what an Engine reads from the store.
type Source interface {
	// SearchableItems returns the capsule's items that have chunks indexed.
	SearchableItems(ctx context.Context, capsule string) ([]domain.Item, error)
	// ChunkVectors calls fn with each stored chunk vector of the capsule.
	ChunkVectors(ctx context.Context, capsule string, fn func(itemID string, idx int, vec []float32) error) error
	// Keyword streams the capsule's chunks matching any term in BM25 order
	// (best first, positive scores) until fn returns false.
	Keyword(ctx context.Context, capsule string, terms []string, fn func(itemID string, idx int, score float64) bool) error
	// ChunkText returns one chunk's text.
	ChunkText(ctx context.Context, itemID string, idx int) (string, error)
}

// KeywordBounder is a Source that can give the query-relative keyword
// bound of several terms at once: for each term, the best BM25 score the term
// alone reaches in the capsule (0 where it matches nothing). Without it the
// Engine asks Keyword once per term.
type KeywordBounder interface {
	KeywordBounds(ctx context.Context, capsule string, terms []string) ([]float64, error)
}

// KeywordPager is a Source whose Keyword reads its ranking in pages:
// KeywordN is Keyword told how many hits the caller expects to need, so that
// its first page holds them.
type KeywordPager interface {
	KeywordN(ctx context.Context, capsule string, terms []string, want int, fn func(itemID string, idx int, score float64) bool) error
}

// KeywordTopper is a Source that streams the keyword ranking without
// scoring every match, given each term's bound (as KeywordBounder gives
// it): the ranking of the terms in bound order, best first, equal to the
// last bit to what Keyword streams for them in that order. items, when not
// nil, restricts it to those items' chunks (a selective filter's items);
// want is the number of hits the caller expects to need.
type KeywordTopper interface {
	KeywordTop(ctx context.Context, capsule string, terms []string, bounds []float64, items []string, want int, fn func(itemID string, idx int, score float64) bool) error
}

// KeywordWarmer is a Source that keeps per-capsule keyword structures
// (the SQLite store's in-process keyword index, read from its file or
// built): KeywordReady gets the capsule's ready, returning when it is. The
// Engine calls it in the background when it loads a capsule, so that the
// keyword side's preparation and the load run at once.
type KeywordWarmer interface {
	KeywordReady(ctx context.Context, capsule string) error
}

// ChunkTexter is a Source that reads several chunks' texts in one call:
// texts[i] is the text of chunk idxs[i] of item itemIDs[i], found[i] false
// where that chunk no longer exists. Without it the Engine calls ChunkText
// once per hit.
type ChunkTexter interface {
	ChunkTexts(ctx context.Context, itemIDs []string, idxs []int) (texts []string, found []bool, err error)
}

// Versioned is a Source shared by several processes: a capsule's generation
// changes, in the same transaction, whenever any process changes its
// searchable items. An Engine over a Versioned source checks the generation
// on each query and reloads a capsule whose generation moved (over a
// StoreSearcher, which it does not load, it drops its keyword bounds).
type Versioned interface {
	Generation(ctx context.Context, capsule string) (int64, error)
}

// QueryEmbedder embeds query texts into unit vectors.
type QueryEmbedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// WordKnower is a QueryEmbedder that knows its model's vocabulary: HasWord
// reports whether a lower-cased word is one whole word of it. The hybrid
// score's coverage (KeywordNormCoverage) counts only such ordinary words:
// a rare token (a name, an identifier, a misspelling) that the capsule does
// not hold says nothing about whether the capsule uses the query's words.
type WordKnower interface {
	HasWord(word string) bool
}

// Fusion names how hybrid search combines its two rankings.
type Fusion string

// The fusion methods.
const (
	FusionConvex Fusion = "convex" // Alpha·dense + (1−Alpha)·keyword, on normalised scores
	FusionRRF    Fusion = "rrf"    // reciprocal rank fusion, scaled to [0, 1]
)

// KeywordNorm names how raw BM25 scores map to [0, 1].
type KeywordNorm string

// The keyword normalisations.
const (
	// KeywordNormQuery divides a chunk's BM25 score by the most the query
	// can score in the capsule: the sum, over the query's terms, of the best
	// score each term alone reaches in the capsule (a term absent from the
	// capsule counts as the mean of the present ones). A chunk that is the
	// capsule's best match for every term scores 1 whatever the capsule's
	// size, so tiny capsules, where BM25's IDF collapses, still score
	// sensibly.
	KeywordNormQuery KeywordNorm = "query"
	// KeywordNormCoverage is KeywordNormQuery whose hybrid keyword side is
	// weighted by the share of the query's ordinary words (terms the
	// embedding model knows as words, WordKnower; every term when it does
	// not say) that occur in the capsule at all (rank.CoveredKeyword): when
	// the capsule holds one of the query's three words, its keyword matches
	// can speak for a third of the query, and a chunk whose only match is
	// that word adds a third of its keyword score. Keyword mode scores as
	// KeywordNormQuery.
	KeywordNormCoverage KeywordNorm = "coverage"
	// KeywordNormSaturate squashes the raw score x as x/(x+BM25Scale).
	KeywordNormSaturate KeywordNorm = "saturate"
)

// Config tunes an Engine. Zero values take the defaults.
type Config struct {
	// Fusion is the hybrid method. Default FusionConvex.
	Fusion Fusion
	// Alpha is the dense weight of the convex mix. Default 0.5 (SciFact
	// train, see the package documentation).
	Alpha float64
	// KeywordNorm is how a raw BM25 score becomes a keyword score in
	// [0, 1]. Default KeywordNormCoverage.
	KeywordNorm KeywordNorm
	// BM25Scale is K in the keyword score x/(x+K) of KeywordNormSaturate.
	// Default 10.
	BM25Scale float64
	// RRFK is k in 1/(k+rank). Default 60.
	RRFK float64
	// ApproxMin is the number of chunks from which a capsule's dense scan
	// is approximate (sign-code Hamming scan, then exact rerank); negative:
	// always exact. Default DefaultApproxMin.
	ApproxMin int
	// ApproxRerank is how many Hamming-nearest chunks each approximate scan
	// scores exactly. Default DefaultApproxRerank.
	ApproxRerank int
	// GraphMin is the number of chunks from which a capsule's dense search
	// goes through an HNSW graph, built in the background (the scan serves
	// until it is ready) and kept current item by item; negative: never.
	// Default DefaultGraphMin.
	GraphMin int
	// GraphEf is the graph search's beam width (at least the requested
	// depth). Default: GraphEfFor the capsule's chunks.
	GraphEf int
	// GraphWorkers is how many goroutines build a graph. Default
	// GOMAXPROCS; 1 builds the same graph every time (the others are as
	// good, not identical).
	GraphWorkers int
	// GraphDir is the folder where capsules' graphs are kept between runs
	// (graphfile.go): written when a build ends and at Close, read back
	// instead of a build when the capsule next loads. Empty: never kept.
	GraphDir string
	// Depth is the least number of candidates each retriever contributes
	// to hybrid fusion. Default 100.
	Depth int
	// Now is the clock for recency. Default time.Now.
	Now func() time.Time
	// Reranker, when set, is an optional stage after fusion: the best
	// RerankDepth fused candidates of a query with text are scored by it
	// and reordered, best first, and the hit's score is the reranker's.
	// Nil: off (the default).
	Reranker Reranker
	// RerankDepth is how many fused candidates the reranker scores (at
	// least the query's limit). Default 50.
	RerankDepth int
}

// Reranker scores documents against a query: one score per document, in
// order, higher is more relevant (internal/rerank is the HTTP one).
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}

func (c Config) withDefaults() Config {
	if c.Fusion == "" {
		c.Fusion = FusionConvex
	}
	if c.Alpha <= 0 || c.Alpha > 1 {
		c.Alpha = 0.5
	}
	if c.KeywordNorm == "" {
		c.KeywordNorm = KeywordNormCoverage
	}
	if c.BM25Scale <= 0 {
		c.BM25Scale = 10
	}
	if c.RerankDepth <= 0 {
		c.RerankDepth = 50
	}
	if c.RRFK <= 0 {
		c.RRFK = rank.DefaultRRFK
	}
	if c.ApproxMin == 0 {
		c.ApproxMin = DefaultApproxMin
	}
	if c.ApproxRerank <= 0 {
		c.ApproxRerank = DefaultApproxRerank
	}
	if c.GraphMin == 0 {
		c.GraphMin = DefaultGraphMin
	}
	if c.GraphWorkers <= 0 {
		c.GraphWorkers = runtime.GOMAXPROCS(0)
	}
	if c.Depth <= 0 {
		c.Depth = 100
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Defaults of the approximate dense scan (see the package documentation for
// the measurements behind them).
const (
	DefaultApproxMin    = 50000
	DefaultApproxRerank = 1000
)

// Engine answers capsule queries over an in-memory index of each capsule,
// or through the store's own search where the Source is a StoreSearcher.
type Engine struct {
	cfg   Config
	src   Source
	emb   QueryEmbedder // nil: semantic search is off
	dim   int
	mu    sync.Mutex
	index map[string]*capIndex
	gens  map[string]int64 // each capsule's generation at its last query (StoreSearcher over Versioned)

	// Each (capsule, term)'s best single-term BM25 score, for the
	// query-relative keyword score. Any change to any capsule clears it
	// (BM25's IDF counts every capsule's rows) and bumps boundsGen.
	boundsMu  sync.Mutex
	bounds    map[boundKey]float64
	boundsGen int64

	// Background graph builds: life ends with Close.
	graphCost  int // the filter cut-off's unit, defaultGraphCost (tests lower it)
	vecFileMin int // DefaultVectorFileMin (tests lower it)
	life       context.Context
	stop       context.CancelFunc
	builds     sync.WaitGroup
}

type boundKey struct{ capsule, term string }

// maxBounds caps the bound cache; past it the cache starts over.
const maxBounds = 100000

// changed clears what depends on the whole index's contents.
func (e *Engine) changed() {
	e.boundsMu.Lock()
	e.bounds = nil
	e.boundsGen++
	e.boundsMu.Unlock()
}

// termBounds returns each term's best score alone in the capsule, cached per
// (capsule, term) until the index changes. The terms not cached are asked
// for at once where the source can (KeywordBounder), else one by one.
func (e *Engine) termBounds(ctx context.Context, capsule string, terms []string) ([]float64, error) {
	out := make([]float64, len(terms))
	var missing []int
	e.boundsMu.Lock()
	gen := e.boundsGen
	for i, t := range terms {
		best, ok := e.bounds[boundKey{capsule, t}]
		if !ok {
			missing = append(missing, i)
		}
		out[i] = best
	}
	e.boundsMu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	ask := make([]string, len(missing))
	for j, i := range missing {
		ask[j] = terms[i]
	}
	var got []float64
	if kb, ok := e.src.(KeywordBounder); ok {
		var err error
		if got, err = kb.KeywordBounds(ctx, capsule, ask); err != nil {
			return nil, fmt.Errorf("keyword bounds: %w", err)
		}
		if len(got) != len(ask) {
			return nil, fmt.Errorf("keyword bounds: %d for %d terms", len(got), len(ask))
		}
	} else {
		got = make([]float64, len(ask))
		for j, t := range ask {
			err := e.src.Keyword(ctx, capsule, []string{t}, func(_ string, _ int, score float64) bool {
				got[j] = score
				return false
			})
			if err != nil {
				return nil, fmt.Errorf("keyword bound for %q: %w", t, err)
			}
		}
	}
	e.boundsMu.Lock()
	defer e.boundsMu.Unlock()
	for j, i := range missing {
		out[i] = got[j]
		if e.boundsGen == gen { // nothing changed meanwhile
			if e.bounds == nil || len(e.bounds) >= maxBounds {
				e.bounds = map[boundKey]float64{}
			}
			e.bounds[boundKey{capsule, terms[i]}] = got[j]
		}
	}
	return out, nil
}

// New returns an Engine over src. emb may be nil (keyword search only); dim
// is its vector width.
func New(src Source, emb QueryEmbedder, dim int, cfg Config) *Engine {
	life, stop := context.WithCancel(context.Background())
	return &Engine{cfg: cfg.withDefaults(), src: src, emb: emb, dim: dim, index: map[string]*capIndex{}, graphCost: defaultGraphCost, vecFileMin: DefaultVectorFileMin, life: life, stop: stop}
}

// Semantic reports whether dense retrieval is available.
func (e *Engine) Semantic() bool { return e.emb != nil }

// ErrSemanticOff is returned for semantic queries when no embedder is set.
var ErrSemanticOff = &domain.Error{Kind: domain.KindUnprocessable, Code: "semantic_search_off", Param: "wishlist.mode",
	Message: "semantic search is off on this server (no embedding model); use mode keyword or hybrid"}

// capIndex is one capsule's searchable items and vectors.
type capIndex struct {
	name   string
	mu     sync.RWMutex
	loaded bool
	gen    int64 // the source's generation when loaded (Versioned sources)
	items  map[string]*entry
	chunks int

	// Sign codes for the approximate scan (codeWords 0: none kept).
	codeWords int
	mean      []float32 // the vectors' mean when coded, which centres codes
	codedAt   int       // chunks when mean was computed
	dists     sync.Pool // *[]uint16: the approximate scan's distance buffers

	snapMu sync.Mutex // guards list and spans, built lazily by readers
	list   []*entry
	spans  []span

	graph *graph      // the HNSW graph of large capsules, nil until built
	build *graphBuild // the graph being built, nil when none

	// The vectors file (vecfile.go): vecEdits counts changes of entries
	// since the load, vecSaved the count when the file last matched;
	// vecSaving is set while a write runs.
	vecEdits, vecSaved uint64
	vecSaving          bool
	vecFile            bool // the capsule keeps a vectors file
	// vecChecked is closed when the background check of the mapped
	// vectors file the last load started (verifyAsync) ends; nil: none.
	vecChecked chan struct{}

	// Filters' accepted sets (acceptedFor); accGen moves with every change
	// of the items, under mu for writing.
	accMu  sync.Mutex
	acc    map[string]*accepted
	accGen uint64
}

// entry is one item with its chunk vectors, row idx i at vecs[i*dim:], and
// their sign codes at codes[i*codeWords:].
// An entry's item, rows and vectors never change once it is in ci.items (a
// change makes a new entry), so that graph builds and file writes may read
// them without the lock; its codes are replaced (never changed in place)
// under the lock. Vectors and codes may be views of a vectors file's
// read-only mapping.
type entry struct {
	item  domain.Item
	idxs  []int
	vecs  []float32
	codes []uint64
	sum   uint32 // vecmath.Checksum(vecs)
}

func (e *Engine) capsule(name string) *capIndex {
	e.mu.Lock()
	defer e.mu.Unlock()
	ci := e.index[name]
	if ci == nil {
		ci = &capIndex{name: name, items: map[string]*entry{}}
		e.index[name] = ci
	}
	return ci
}

// load fills the capsule's index from the source if it is not loaded yet,
// or, for a Versioned source, if another process changed it since.
func (e *Engine) load(ctx context.Context, name string) (*capIndex, error) {
	ci := e.capsule(name)
	var gen int64
	if v, ok := e.src.(Versioned); ok {
		// Read before loading: a change after this read is reloaded next time.
		g, err := v.Generation(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("load capsule %s: %w", name, err)
		}
		gen = g
	}
	ci.mu.RLock()
	ok := ci.loaded && ci.gen == gen
	ci.mu.RUnlock()
	if ok {
		return ci, nil
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.loaded && ci.gen == gen {
		return ci, nil
	}
	if ci.loaded {
		e.changed() // another process changed the capsule
	}
	if kw, ok := e.src.(KeywordWarmer); ok && e.life.Err() == nil {
		go kw.KeywordReady(e.life, name) //nolint:errcheck // a failure leaves the keyword side to the store's own path
	}
	var sums *vectorSums
	if e.emb != nil {
		sums = e.readVectorSums(ctx, name) // beside the items: both are walks of the capsule's items
		defer sums.cancel()
	}
	items, err := e.src.SearchableItems(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("load capsule %s: %w", name, err)
	}
	ci.items = make(map[string]*entry, len(items))
	ci.chunks = 0
	for _, it := range items {
		ci.items[it.ID] = &entry{item: it}
	}
	var vf *vecFile
	var fromStore int
	if e.emb != nil {
		if vf, fromStore, err = e.fillVectors(ctx, ci, items, sums); err != nil {
			return nil, fmt.Errorf("load capsule %s: %w", name, err)
		}
	}
	ci.codeWords, ci.mean, ci.codedAt = 0, nil, 0
	if e.emb != nil && e.cfg.ApproxMin > 0 {
		if vf != nil && vf.codeWords == (e.dim+63)/64 && fromStore < vf.codedAt/4 {
			// The file's mean and codes: items read from the store are
			// coded about the same mean.
			ci.codeWords, ci.mean, ci.codedAt = vf.codeWords, vf.mean, vf.codedAt
			for _, en := range ci.items {
				if len(en.codes) != len(en.idxs)*ci.codeWords {
					ci.encode(en, e.dim)
				}
			}
		} else {
			ci.recode(e.dim)
		}
	}
	ci.invalidate()
	ci.listFrom(items)
	ci.accGen++
	ci.loaded, ci.gen = true, gen
	ci.vecEdits, ci.vecSaved = 0, 0
	if vf == nil || fromStore > 0 || len(vf.items) != len(ci.items) {
		ci.vecSaved = ^uint64(0) // the file does not hold this state
	}
	ci.stopGraph()
	e.maybeBuild(ci)
	if vf != nil {
		e.verifyAsync(ci, vf)
	}
	e.maybeSaveVectors(ci)
	return ci, nil
}

// ItemIndexed records that an item's chunks (with their vectors, by idx) are
// now searchable, replacing what the item had.
func (e *Engine) ItemIndexed(it domain.Item, chunks []domain.Chunk) {
	e.changed()
	ci := e.capsule(it.Capsule)
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if !ci.loaded {
		return
	}
	if old := ci.items[it.ID]; old != nil {
		ci.chunks -= len(old.idxs)
	}
	en := &entry{item: it}
	for _, c := range chunks {
		if e.emb != nil && len(c.Vector) == e.dim {
			en.idxs = append(en.idxs, c.Idx)
			en.vecs = append(en.vecs, c.Vector...)
		}
	}
	en.sum = vecmath.Checksum(en.vecs)
	ci.vecEdits++
	ci.accGen++
	ci.chunks += len(en.idxs)
	ci.items[it.ID] = en
	if ci.codeWords > 0 {
		if ci.chunks >= 2*ci.codedAt && ci.chunks >= 1024 && ci.codedAt < recodeMax {
			ci.recode(e.dim) // the mean has drifted: centre every code anew
		} else {
			ci.encode(en, e.dim)
		}
	}
	ci.put(en)
	e.graphChanged(ci, it.ID)
}

// recodeMax is the number of chunks from which a capsule's mean vector is
// taken as settled: a capsule growing in this process recomputes its mean and
// every sign code each time it doubles, until its mean was computed over
// recodeMax chunks; from then on, one item's change encodes that item alone.
const recodeMax = 1 << 16

// ItemUpdated refreshes a searchable item's attributes (metadata, times).
func (e *Engine) ItemUpdated(it domain.Item) {
	ci := e.capsule(it.Capsule)
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if en := ci.items[it.ID]; ci.loaded && en != nil {
		en.item = it
		ci.accGen++
	}
}

// ItemRemoved drops an item from its capsule's index.
func (e *Engine) ItemRemoved(capsule, id string) {
	e.changed()
	ci := e.capsule(capsule)
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if en := ci.items[id]; en != nil {
		ci.chunks -= len(en.idxs)
		ci.vecEdits++
		ci.accGen++
		delete(ci.items, id)
		ci.drop(id)
		e.graphChanged(ci, id)
	}
}

// CapsuleRemoved forgets a capsule.
func (e *Engine) CapsuleRemoved(capsule string) {
	e.changed()
	e.mu.Lock()
	ci := e.index[capsule]
	delete(e.index, capsule)
	delete(e.gens, capsule)
	e.mu.Unlock()
	if ci != nil {
		ci.mu.Lock()
		ci.stopGraph()
		ci.mu.Unlock()
	}
	if e.cfg.GraphDir != "" {
		os.Remove(GraphPath(e.cfg.GraphDir, capsule)) // none, most often
		os.Remove(VectorsPath(e.cfg.GraphDir, capsule))
	}
}

// Stats reports the indexed items and vectors of a loaded capsule.
func (e *Engine) Stats(capsule string) (items, vectors int) {
	ci := e.capsule(capsule)
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	return len(ci.items), ci.chunks
}

// ref names one chunk.
type ref struct {
	item string
	idx  int
}

// cand is a chunk with its scores from each retriever.
type cand struct {
	ref
	en          *entry
	dense       float64 // cosine
	hasDense    bool
	bm25        float64
	denseRank   int // 1-based, 0 when absent
	keywordRank int
	relevance   float64 // the fused score, before recency
	score       float64
}

// Search runs a query over a capsule and returns its hits, best first: it
// plans the query (plan), runs both retrievers at once (retrieve), merges
// and scores their candidates (merge, score) and reads the best ones' texts
// (hydrate); with a Reranker, the best RerankDepth of them are reordered by
// it (rerank). Over a StoreSearcher the retrievers run in the store
// (storeSearch) and the Engine holds none of the capsule's vectors or items.
func (e *Engine) Search(ctx context.Context, capsule string, q domain.Query) ([]domain.Hit, error) {
	p, err := e.plan(q)
	if err != nil {
		return nil, err
	}
	rerank := e.cfg.Reranker != nil && strings.TrimSpace(q.Text) != ""
	n := p.limit
	if rerank { // the reranker sees RerankDepth candidates
		n = max(p.limit, e.cfg.RerankDepth)
		p.depth = max(p.depth, n)
	}
	var hits []domain.Hit
	if ss, ok := e.src.(StoreSearcher); ok {
		hits, err = e.storeSearch(ctx, ss, capsule, q, p, n)
	} else {
		hits, err = e.memorySearch(ctx, capsule, q, p, n)
	}
	if err != nil || !rerank {
		return hits, err
	}
	return e.rerank(ctx, q.Text, hits, p.limit)
}

// memorySearch is Search over the Engine's own index of the capsule.
func (e *Engine) memorySearch(ctx context.Context, capsule string, q domain.Query, p plan, n int) ([]domain.Hit, error) {
	ci, err := e.load(ctx, capsule)
	if err != nil {
		return nil, err
	}
	pred := Compile(q.Wishlist)
	r, err := e.retrieve(ctx, ci, capsule, q.Text, p, pred, filterKey(q.Wishlist))
	if err != nil {
		return nil, err
	}
	return e.fused(ctx, ci, r, p, q, n)
}

// fused merges and scores the candidates and reads the best n.
func (e *Engine) fused(ctx context.Context, ci *capIndex, r retrieved, p plan, q domain.Query, n int) ([]domain.Hit, error) {
	// The candidates point into the capsule's entries: read them, and the
	// items' attributes, under the read lock until the hits are made.
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	cands := e.merge(r)
	e.score(cands, p.mode, r.kw, q.Wishlist.Recency)
	sort.Slice(cands, func(i, j int) bool { return less(cands[i], cands[j]) })
	return e.hydrate(ctx, cands, n, q.Wishlist)
}

// rerank reorders hits by the reranker's scores of their texts and keeps
// the best limit; a tie keeps the fused order.
func (e *Engine) rerank(ctx context.Context, query string, hits []domain.Hit, limit int) ([]domain.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	docs := make([]string, len(hits))
	for i, h := range hits {
		docs[i] = h.Content
	}
	scores, err := e.cfg.Reranker.Rerank(ctx, query, docs)
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	if len(scores) != len(hits) {
		return nil, fmt.Errorf("rerank: %d scores for %d hits", len(scores), len(hits))
	}
	// Scores are in [0, 1]: a model that returns logits gets their logistic
	// (same order).
	logits := false
	for _, s := range scores {
		if math.IsNaN(s) {
			return nil, fmt.Errorf("rerank: a score is NaN")
		}
		logits = logits || s < 0 || s > 1
	}
	for i := range hits {
		hits[i].Score = scores[i]
		if logits {
			hits[i].Score = 1 / (1 + math.Exp(-scores[i]))
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	return hits[:min(limit, len(hits))], nil
}

// plan is how a query is run: its mode, its number of hits, and how many
// candidates each retriever contributes.
type plan struct {
	mode  domain.SearchMode
	limit int
	depth int
}

// plan picks the query's mode (hybrid without an embedder falls back to
// keyword; semantic without one is ErrSemanticOff) and depth: at least
// Config.Depth and twice the limit for hybrid, ten times the limit when the
// wishlist may drop candidates (a per-item cap, a minimum score) or reorder
// them (recency), and for one retriever alone half that, or just the limit
// when nothing drops or reorders.
func (e *Engine) plan(q domain.Query) (plan, error) {
	mode := q.Wishlist.Mode
	if mode == "" {
		mode = domain.ModeHybrid
	}
	if mode == domain.ModeSemantic && e.emb == nil {
		return plan{}, ErrSemanticOff
	}
	if mode == domain.ModeHybrid && e.emb == nil {
		mode = domain.ModeKeyword
	}
	limit := q.Limit
	if limit <= 0 {
		limit = domain.DefaultQueryLimit
	}
	w := q.Wishlist
	reshapes := w.MaxChunksPerItem > 0 || w.MinScore > 0 || w.Recency != nil
	depth := max(e.cfg.Depth, 2*limit)
	if reshapes {
		depth = max(depth, 10*limit)
	}
	if mode != domain.ModeHybrid {
		depth = max(limit, depth/2)
		if !reshapes {
			depth = limit
		}
	}
	return plan{mode: mode, limit: limit, depth: depth}, nil
}

// retrieved is what the retrievers found for a query.
type retrieved struct {
	qvec   []float32 // the query's vector; nil in keyword mode
	dense  []*cand   // the dense top depth, best first
	kwHits []kwHit   // the keyword top depth, in BM25 order
	kw     kwNorm    // the query's keyword normalisation (KeywordNormQuery, KeywordNormCoverage)
}

// retrieve runs, at once, the keyword search, the query's best attainable
// BM25 (for KeywordNormQuery) and the query's embedding followed by the
// dense scan: the keyword side is the other half of a hybrid query's time.
// The first error cancels the others' context and is returned.
func (e *Engine) retrieve(ctx context.Context, ci *capIndex, capsule, text string, p plan, pred Predicate, key string) (retrieved, error) {
	var r retrieved
	g, gctx := errgroup.WithContext(ctx)
	if _, top := e.src.(KeywordTopper); top && p.mode != domain.ModeSemantic {
		// The ranking needs the terms' bounds first; the normalisation
		// reads the same ones.
		ts := terms.Capsule(text)
		g.Go(func() error {
			bounds, err := e.termBounds(gctx, capsule, ts)
			if err != nil {
				return err
			}
			if e.cfg.KeywordNorm != KeywordNormSaturate {
				r.kw = e.keywordNorm(ts, bounds)
			}
			r.kwHits, err = e.keywordTopHits(gctx, ci, capsule, ts, bounds, p.depth, pred, key)
			return err
		})
	} else if p.mode != domain.ModeSemantic {
		ts := terms.Capsule(text)
		if e.cfg.KeywordNorm != KeywordNormSaturate {
			g.Go(func() (err error) {
				r.kw, err = e.queryKeywordNorm(gctx, capsule, ts)
				return err
			})
		}
		g.Go(func() (err error) {
			r.kwHits, err = e.keywordHits(gctx, ci, capsule, ts, p.depth, pred)
			return err
		})
	}
	if p.mode != domain.ModeKeyword {
		g.Go(func() error {
			vs, err := e.emb.Embed(gctx, []string{text})
			if err != nil {
				return fmt.Errorf("embed query: %w", err)
			}
			if len(vs) != 1 || len(vs[0]) != e.dim {
				return errors.New("embed query: wrong vector shape")
			}
			// The dense scan may run while the keyword search still does:
			// each holds the capsule's read lock on its own, and neither
			// waits for the other while it holds it (a writer queued
			// between two read locks would otherwise deadlock them).
			ci.mu.RLock()
			var acc *accepted
			if pred != nil {
				acc = ci.acceptedFor(key, pred)
			}
			r.dense = e.denseSearch(ci, vs[0], p.depth, pred, acc)
			ci.mu.RUnlock()
			r.qvec = vs[0]
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return retrieved{}, err
	}
	return r, nil
}

// merge joins both retrievers' candidates, each chunk once with its rank in
// each list; a keyword hit that the dense top left out gets its cosine.
// Callers hold the capsule's read lock.
func (e *Engine) merge(r retrieved) []*cand {
	byRef := map[ref]*cand{}
	var cands []*cand
	for i, c := range r.dense {
		c.denseRank = i + 1
		byRef[c.ref] = c
		cands = append(cands, c)
	}
	for i, h := range r.kwHits {
		c := byRef[h.ref]
		if c == nil {
			c = &cand{ref: h.ref, en: h.en}
			if r.qvec != nil {
				c.dense, c.hasDense = cosineOf(h.en, h.ref.idx, r.qvec, e.dim)
			}
			byRef[h.ref] = c
			cands = append(cands, c)
		}
		c.bm25, c.keywordRank = h.score, i+1
	}
	return cands
}

// score sets each candidate's score in [0, 1]: the fusion of its retrievers'
// scores (fuse), its relevance, scaled by its recency factor when the
// wishlist asks (rank.RecencyScore): recency reorders relevant candidates
// and never makes an irrelevant one relevant (relevance 0 stays 0, and
// hydrate leaves it out). Callers hold the capsule's read lock.
func (e *Engine) score(cands []*cand, mode domain.SearchMode, kw kwNorm, rec *domain.Recency) {
	now := e.cfg.Now()
	for _, c := range cands {
		c.relevance = min(max(e.fuse(mode, c, kw), 0), 1)
		c.score = c.relevance
		if rec != nil && rec.HalfLife > 0 {
			t := c.en.item.TimeAdded
			if rec.Field != "time_added" {
				t = authored(&c.en.item)
			}
			age := max(now.Sub(t), 0)
			decay := math.Exp2(-float64(age) / float64(rec.HalfLife))
			c.score = rank.RecencyScore(c.relevance, rec.Weight, decay)
		}
	}
}

// hydrate makes the hits: the best candidates (sorted) that have some
// relevance (a fused score above 0: the limit is never padded with
// unrelated chunks) and pass the wishlist's minimum score and per-item cap, with
// their texts read a batch at a time; a chunk removed since the scan gives
// its place to the next candidate. Callers hold the capsule's read lock.
func (e *Engine) hydrate(ctx context.Context, cands []*cand, limit int, w domain.Wishlist) ([]domain.Hit, error) {
	hits := make([]domain.Hit, 0, min(limit, len(cands)))
	perItem := map[string]int{}
	next := 0
	for len(hits) < limit && next < len(cands) {
		var batch []*cand
		for next < len(cands) && len(batch) < limit-len(hits) {
			c := cands[next]
			if c.score < w.MinScore {
				next = len(cands) // sorted: the rest score lower
				break
			}
			next++
			if c.relevance <= 0 {
				continue
			}
			if m := w.MaxChunksPerItem; m > 0 && perItem[c.item] >= m {
				continue
			}
			perItem[c.item]++
			batch = append(batch, c)
		}
		texts, found, err := e.chunkTexts(ctx, batch)
		if err != nil {
			return nil, err
		}
		for i, c := range batch {
			if !found[i] {
				perItem[c.item]--
				continue
			}
			hits = append(hits, domain.Hit{Item: c.en.item, Idx: c.idx, Content: texts[i], Score: c.score})
		}
	}
	return hits, nil
}

// chunkTexts reads the texts of cs's chunks, in one call where the source
// can (ChunkTexter).
func (e *Engine) chunkTexts(ctx context.Context, cs []*cand) ([]string, []bool, error) {
	if ct, ok := e.src.(ChunkTexter); ok && len(cs) > 0 {
		ids, idxs := make([]string, len(cs)), make([]int, len(cs))
		for i, c := range cs {
			ids[i], idxs[i] = c.item, c.idx
		}
		return ct.ChunkTexts(ctx, ids, idxs)
	}
	texts, found := make([]string, len(cs)), make([]bool, len(cs))
	for i, c := range cs {
		text, err := e.src.ChunkText(ctx, c.item, c.idx)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, nil, err
		}
		texts[i], found[i] = text, true
	}
	return texts, found, nil
}

// kwHit is one keyword match that passed the query's filters, in BM25 order.
type kwHit struct {
	ref   ref
	en    *entry
	score float64
}

// keywordHits reads the capsule's best keyword matches for terms that pass
// pred, at most depth of them, under the capsule's read lock.
func (e *Engine) keywordHits(ctx context.Context, ci *capIndex, capsule string, terms []string, depth int, pred func(*domain.Item) bool) ([]kwHit, error) {
	keyword := e.src.Keyword
	if kp, ok := e.src.(KeywordPager); ok {
		// A filter rejects some hits: ask for more than depth then.
		want := depth
		if pred != nil {
			want *= 2
		}
		keyword = func(ctx context.Context, capsule string, terms []string, fn func(string, int, float64) bool) error {
			return kp.KeywordN(ctx, capsule, terms, want, fn)
		}
	}
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	var hits []kwHit
	err := keyword(ctx, capsule, terms, func(id string, idx int, score float64) bool {
		en := ci.items[id]
		if en == nil || (pred != nil && !pred(&en.item)) {
			return true
		}
		hits = append(hits, kwHit{ref: ref{id, idx}, en: en, score: score})
		return len(hits) < depth
	})
	return hits, err
}

// selectiveShare: a filter that passes at most this share of a capsule's
// items has the keyword search score its items' matches only
// (KeywordTopper's items); a broader one reads the unfiltered ranking
// until enough hits pass.
const selectiveShare = 0.1

// keywordTopHits is keywordHits over a KeywordTopper, with the terms'
// bounds.
func (e *Engine) keywordTopHits(ctx context.Context, ci *capIndex, capsule string, terms []string, bounds []float64, depth int, pred func(*domain.Item) bool, key string) ([]kwHit, error) {
	kt := e.src.(KeywordTopper)
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	want := depth
	var items []string
	if pred != nil {
		want *= 2 // a filter rejects some hits: ask for more than depth
		items = ci.acceptedFor(key, pred).ids
		if float64(len(items)) <= selectiveShare*float64(len(ci.items)) {
			want = depth
			if items == nil {
				items = []string{} // none passes
			}
		} else {
			items = nil
		}
	}
	var hits []kwHit
	err := kt.KeywordTop(ctx, capsule, terms, bounds, items, want, func(id string, idx int, score float64) bool {
		en := ci.items[id]
		if en == nil || (pred != nil && !pred(&en.item)) {
			return true
		}
		hits = append(hits, kwHit{ref: ref{id, idx}, en: en, score: score})
		return len(hits) < depth
	})
	return hits, err
}

func less(a, b *cand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.item != b.item {
		return a.item < b.item
	}
	return a.idx < b.idx
}

// kwNorm is how a query's raw BM25 scores become keyword scores: max, the
// most the query can score in the capsule, and cover, the share of its
// ordinary words the capsule holds (1 when it has none).
type kwNorm struct{ max, cover float64 }

// queryKeywordNorm reads the query's keyword normalisation from each term's
// best score alone (KeywordNormQuery, KeywordNormCoverage): the most a query
// of these terms can score in the capsule, the sum of those scores with a
// term that matches nothing counting as the mean of those that match, and
// the share of the ordinary words (WordKnower) that match something.
func (e *Engine) queryKeywordNorm(ctx context.Context, capsule string, terms []string) (kwNorm, error) {
	if len(terms) == 0 {
		return kwNorm{}, nil
	}
	bounds, err := e.termBounds(ctx, capsule, terms)
	if err != nil {
		return kwNorm{}, err
	}
	return e.keywordNorm(terms, bounds), nil
}

// keywordNorm is queryKeywordNorm from the terms' bounds.
func (e *Engine) keywordNorm(terms []string, bounds []float64) kwNorm {
	if len(terms) == 0 {
		return kwNorm{}
	}
	n := kwNorm{max: rank.QueryMaxBM25(bounds)}
	// The coverage counts the ordinary words only (WordKnower).
	if wk, ok := e.emb.(WordKnower); ok {
		words := bounds[:0:0]
		for i, t := range terms {
			if bounds[i] > 0 || wk.HasWord(t) {
				words = append(words, bounds[i])
			}
		}
		bounds = words
	}
	n.cover = 1
	if len(bounds) > 0 {
		n.cover = rank.QueryCoverage(bounds)
	}
	return n
}

// keywordScore maps a raw BM25 score to [0, 1].
func (e *Engine) keywordScore(bm25, kwMax float64) float64 {
	if bm25 <= 0 {
		return 0
	}
	if e.cfg.KeywordNorm == KeywordNormSaturate {
		return bm25 / (bm25 + e.cfg.BM25Scale)
	}
	return rank.KeywordScore(bm25, kwMax)
}

// fuse scores a candidate in [0, 1] for the mode; n is the query's keyword
// normalisation.
func (e *Engine) fuse(mode domain.SearchMode, c *cand, n kwNorm) float64 {
	dense := max(c.dense, 0)
	kw := e.keywordScore(c.bm25, n.max)
	switch mode {
	case domain.ModeSemantic:
		return dense
	case domain.ModeKeyword:
		return kw
	}
	if e.cfg.Fusion == FusionRRF {
		s := 0.0
		if c.denseRank > 0 {
			s += rank.RRF(1, e.cfg.RRFK, c.denseRank)
		}
		if c.keywordRank > 0 {
			s += rank.RRF(1, e.cfg.RRFK, c.keywordRank)
		}
		return s / (2 / (e.cfg.RRFK + 1))
	}
	if e.cfg.KeywordNorm == KeywordNormCoverage {
		kw = rank.CoveredKeyword(kw, n.cover)
	}

	return rank.ConvexScore(e.cfg.Alpha, dense, kw)
}

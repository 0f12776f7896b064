package memory

import (
	"context"
	"sync"
	"time"

	"capsuled/internal/domain"
)

// vectorCache keeps each namespace's vectors in memory between selections,
// so a selection costs one query embedding and one scan rather than a read
// of every vector. Writes through this Service drop their namespace's
// entry; entries also expire after a short time, so writes made by other
// replicas on a shared store are seen within that time.
type vectorCache struct {
	ttl time.Duration
	mu  sync.Mutex
	ns  map[string]*vectorEntry
}

type vectorEntry struct {
	gen     uint64
	loaded  time.Time
	vectors []domain.MemoryVector
	// bounds are the best BM25 scores of single terms (FusionCore), kept
	// under the same rules as the vectors: a write drops them, and they
	// expire after the time-to-live.
	bounds   map[string]float64
	boundsAt time.Time
}

func newVectorCache(ttl time.Duration) *vectorCache {
	return &vectorCache{ttl: ttl, ns: map[string]*vectorEntry{}}
}

// get returns the namespace's vectors (live or not: the caller filters),
// loading them when the entry is missing or stale.
func (c *vectorCache) get(ctx context.Context, st Store, ns, model string, now time.Time) ([]domain.MemoryVector, error) {
	c.mu.Lock()
	e := c.ns[ns]
	if e != nil && time.Since(e.loaded) < c.ttl {
		v := e.vectors
		c.mu.Unlock()
		return v, nil
	}
	if e == nil {
		e = &vectorEntry{}
		c.ns[ns] = e
	}
	gen := e.gen
	c.mu.Unlock()
	vecs, err := st.Vectors(ctx, ns, model, domain.LiveFilter{Now: now, IncludeExpired: true, IncludeSuperseded: true})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if cur := c.ns[ns]; cur == e && e.gen == gen {
		e.vectors, e.loaded = vecs, time.Now()
	}
	c.mu.Unlock()
	return vecs, nil
}

// bound returns the cached best BM25 score of term in ns, and the entry's
// generation to store a computed one under.
func (c *vectorCache) bound(ns, term string) (float64, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.ns[ns]
	if e == nil {
		e = &vectorEntry{}
		c.ns[ns] = e
	}
	if time.Since(e.boundsAt) >= c.ttl {
		e.bounds, e.boundsAt = map[string]float64{}, time.Now()
	}
	v, ok := e.bounds[term]
	return v, e.gen, ok
}

// putBound caches a term's best BM25 score unless a write came since gen.
func (c *vectorCache) putBound(ns string, gen uint64, term string, v float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.ns[ns]; e != nil && e.gen == gen && e.bounds != nil {
		e.bounds[term] = v
	}
}

// drop forgets a namespace's vectors and term bounds after a write.
func (c *vectorCache) drop(ns string) {
	c.mu.Lock()
	if e := c.ns[ns]; e != nil {
		e.gen++
		e.loaded = time.Time{}
		e.bounds, e.boundsAt = nil, time.Time{}
	}
	c.mu.Unlock()
}

// dropAll forgets every namespace (after a sweep).
func (c *vectorCache) dropAll() {
	c.mu.Lock()
	for _, e := range c.ns {
		e.gen++
		e.loaded = time.Time{}
		e.bounds, e.boundsAt = nil, time.Time{}
	}
	c.mu.Unlock()
}

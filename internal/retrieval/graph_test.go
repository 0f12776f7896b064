package retrieval

import (
	"context"
	"fmt"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
)

// waitGraph waits for the capsule's running graph build, if any, and
// returns its graph.
func waitGraph(t testing.TB, e *Engine, capsule string) *graph {
	t.Helper()
	ci := e.capsule(capsule)
	ci.mu.RLock()
	b, g := ci.build, ci.graph
	ci.mu.RUnlock()
	if b != nil {
		select {
		case <-b.done:
		case <-time.After(5 * time.Minute):
			t.Fatal("graph build did not end")
		}
		ci.mu.RLock()
		g = ci.graph
		ci.mu.RUnlock()
	}
	return g
}

// graphPair is an engine whose capsule "c" has a graph, and an exact one over
// the same source.
func graphPair(t testing.TB, items, per, dim int) (*Engine, *Engine, *fakeSource) {
	t.Helper()
	src := newFakeSource(items, per, dim, 50)
	g := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: items * per / 2})
	g.graphCost = 64 // filters passing more than a small share use the graph
	t.Cleanup(g.Close)
	if _, err := g.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	if waitGraph(t, g, "c") == nil {
		t.Fatal("no graph built")
	}
	exact := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{ApproxMin: -1, GraphMin: -1})
	if _, err := exact.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	return g, exact, src
}

func dense(e *Engine, q []float32, k int, pred Predicate) []*cand {
	ci := e.capsule("c")
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	return e.denseSearch(ci, q, k, pred, nil)
}

// TestGraphRecallAndScores: the graph's top 10 find at least 95% of the
// exact top 10, unfiltered and under a filter passing half the items, and
// every score is the chunk's exact cosine; a filter passing 1% of the items
// is answered by the scan, exactly.
func TestGraphRecallAndScores(t *testing.T) {
	const items, per, dim = 400, 10, 48
	g, exact, src := graphPair(t, items, per, dim)
	half := Compile(domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpIn, Value: []any{0.0, 1.0, 2.0, 3.0, 4.0}}}})
	one := func(it *domain.Item) bool {
		return it.ID == "itm_000007" || it.ID == "itm_000123" || it.ID == "itm_000321" || it.ID == "itm_000399"
	}
	qs := src.queries(40)
	for _, tc := range []struct {
		name string
		pred Predicate
		min  float64
	}{{"none", nil, 0.95}, {"half", half, 0.95}, {"1%", one, 1}} {
		found := 0
		for _, q := range qs {
			want := map[ref]bool{}
			for _, c := range dense(exact, q, 10, tc.pred) {
				want[c.ref] = true
			}
			got := dense(g, q, 10, tc.pred)
			if len(got) != len(want) {
				t.Fatalf("%s: %d hits, want %d", tc.name, len(got), len(want))
			}
			for i, c := range got {
				if want[c.ref] {
					found++
				}
				if tc.pred != nil && !tc.pred(&c.en.item) {
					t.Fatalf("%s: hit %v fails the filter", tc.name, c.ref)
				}
				v := c.en.vecs[indexOf(c.en.idxs, c.ref.idx)*dim:][:dim]
				if c.dense != float64(vecmath.Dot(q, v)) {
					t.Fatalf("%s: score %v is not the cosine %v", tc.name, c.dense, vecmath.Dot(q, v))
				}
				if i > 0 && got[i-1].dense < c.dense {
					t.Fatalf("%s: not best first", tc.name)
				}
			}
		}
		recall := float64(found) / float64(len(qs)*min(10, len(dense(exact, qs[0], 10, tc.pred))))
		t.Logf("%s: recall@10 %.3f", tc.name, recall)
		if recall < tc.min {
			t.Errorf("%s: recall@10 %.3f < %.2f", tc.name, recall, tc.min)
		}
	}
}

func indexOf(xs []int, x int) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// TestGraphIncremental: an item indexed after the build is found through
// the graph, a removed one is not, a re-indexed one is found with its new
// vectors only; and a capsule that shrinks below half of GraphMin drops its
// graph.
func TestGraphIncremental(t *testing.T) {
	const items, per, dim = 300, 10, 32
	g, _, src := graphPair(t, items, per, dim)
	q := src.queries(1)[0]
	far := make([]float32, dim)
	for j := range far {
		far[j] = -q[j]
	}
	g.ItemIndexed(domain.Item{ID: "new", Capsule: "c", Kind: domain.ItemText},
		[]domain.Chunk{{Idx: 0, Vector: far}, {Idx: 1, Vector: q}})
	top := dense(g, q, 5, nil)
	if top[0].ref != (ref{"new", 1}) || top[0].dense < 0.999 {
		t.Fatalf("new item not first: %+v", top[0].ref)
	}
	g.ItemIndexed(domain.Item{ID: "new", Capsule: "c", Kind: domain.ItemText}, []domain.Chunk{{Idx: 0, Vector: far}})
	for _, c := range dense(g, q, 20, nil) {
		if c.ref.item == "new" {
			t.Fatalf("re-indexed item found by its old vector: %+v", c.ref)
		}
	}
	g.ItemIndexed(domain.Item{ID: "new", Capsule: "c", Kind: domain.ItemText}, []domain.Chunk{{Idx: 3, Vector: q}})
	if top := dense(g, q, 1, nil); top[0].ref != (ref{"new", 3}) {
		t.Fatalf("re-indexed item not first: %+v", top[0].ref)
	}
	g.ItemRemoved("c", "new")
	for _, c := range dense(g, q, 20, nil) {
		if c.ref.item == "new" {
			t.Fatal("removed item found")
		}
	}
	ci := g.capsule("c")
	if ci.graph == nil {
		t.Fatal("graph dropped too early")
	}
	for i := range items * 4 / 5 {
		g.ItemRemoved("c", fmt.Sprintf("itm_%06d", i))
	}
	if ci.graph != nil || ci.build != nil {
		t.Fatal("graph kept below GraphMin/2")
	}
	if hits := dense(g, q, 10, nil); len(hits) != 10 {
		t.Fatalf("scan after the graph went: %d hits", len(hits))
	}
}

// TestGraphDeadRebuild: once a quarter of the nodes are dead the graph is
// built anew in the background; the new graph holds every chunk alive (the
// changes made during its build applied), fewer dead nodes than the bound.
func TestGraphDeadRebuild(t *testing.T) {
	const items, per, dim = 200, 10, 32
	g, _, _ := graphPair(t, items, per, dim)
	ci := g.capsule("c")
	old := ci.graph
	for i := range items / 2 {
		id := fmt.Sprintf("itm_%06d", i)
		v := make([]float32, dim)
		v[i%dim] = 1
		g.ItemIndexed(domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText}, []domain.Chunk{{Idx: 0, Vector: v}, {Idx: 1, Vector: v}, {Idx: 2, Vector: v}, {Idx: 4, Vector: v}, {Idx: 5, Vector: v}, {Idx: 6, Vector: v}, {Idx: 7, Vector: v}, {Idx: 8, Vector: v}, {Idx: 9, Vector: v}, {Idx: 10, Vector: v}})
	}
	gr := waitGraph(t, g, "c")
	if gr == nil || gr == old || 4*gr.dead >= len(gr.nodes) || gr.live() != ci.chunks {
		t.Fatalf("after rebuild: new graph %v, dead %d of %d, live %d of %d", gr != old, gr.dead, len(gr.nodes), gr.live(), ci.chunks)
	}
}

// TestGraphBuildCancelled: a running build ends when the capsule is removed
// or the engine closed, and the scan answers meanwhile.
func TestGraphBuildCancelled(t *testing.T) {
	const items, per, dim = 2000, 10, 64
	src := newFakeSource(items, per, dim, 50)
	e := New(src, fixedEmbedder{src.queries(1)[0]}, dim, Config{GraphMin: 1000})
	if _, err := e.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	ci := e.capsule("c")
	ci.mu.RLock()
	b := ci.build
	ci.mu.RUnlock()
	if b == nil {
		t.Fatal("no build started")
	}
	hits, err := e.Search(context.Background(), "c", domain.Query{Text: "q", Limit: 5, Wishlist: domain.Wishlist{Mode: domain.ModeSemantic}})
	if err != nil || len(hits) != 5 {
		t.Fatal(len(hits), err)
	}
	e.CapsuleRemoved("c")
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		t.Fatal("build not cancelled by CapsuleRemoved")
	}
	if _, err := e.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	b = e.capsule("c").build
	e.Close()
	select {
	case <-b.done:
	default:
		t.Fatal("Close returned before the build ended")
	}
	if g := e.capsule("c").graph; g != nil {
		t.Fatal("cancelled build installed a graph")
	}
}

// TestGraphPendingChanges: items indexed and removed while the graph is
// being built are in it (or not) once it is installed.
func TestGraphPendingChanges(t *testing.T) {
	const items, per, dim = 300, 10, 32
	src := newFakeSource(items, per, dim, 50)
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: 1000})
	t.Cleanup(e.Close)
	if _, err := e.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	q := src.queries(1)[0]
	e.ItemIndexed(domain.Item{ID: "during", Capsule: "c", Kind: domain.ItemText}, []domain.Chunk{{Idx: 0, Vector: q}})
	e.ItemRemoved("c", "itm_000000")
	if waitGraph(t, e, "c") == nil {
		t.Fatal("no graph")
	}
	top := dense(e, q, 10, nil)
	if top[0].ref.item != "during" {
		t.Fatalf("item indexed during the build not first: %+v", top[0].ref)
	}
	for _, c := range dense(e, src.queries(3)[2], 50, nil) {
		if c.ref.item == "itm_000000" {
			t.Fatal("item removed during the build found")
		}
	}
}

func TestGraphEfFor(t *testing.T) {
	for _, c := range []struct{ chunks, want int }{{0, 256}, {100000, 256}, {125000, 256}, {132809, 261}, {270894, 331}, {1000000, 512}, {8000000, 1024}} {
		if got := GraphEfFor(c.chunks); got != c.want {
			t.Errorf("GraphEfFor(%d) = %d, want %d", c.chunks, got, c.want)
		}
	}
}

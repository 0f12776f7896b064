package retrieval

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"testing"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
)

// storedSource is a Source over items and vectors held as given, so that a
// test can remove, change and add items between two engines' loads.
type storedSource struct {
	items []domain.Item
	vecs  map[string][][]float32
}

// storedFrom materialises a fakeSource.
func storedFrom(t testing.TB, f *fakeSource) *storedSource {
	t.Helper()
	s := &storedSource{items: slices.Clone(f.items), vecs: map[string][][]float32{}}
	err := f.ChunkVectors(context.Background(), "c", func(id string, _ int, v []float32) error {
		s.vecs[id] = append(s.vecs[id], v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *storedSource) SearchableItems(context.Context, string) ([]domain.Item, error) {
	return s.items, nil
}

func (s *storedSource) ChunkVectors(_ context.Context, _ string, fn func(string, int, []float32) error) error {
	for _, it := range s.items {
		for idx, v := range s.vecs[it.ID] {
			if err := fn(it.ID, idx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *storedSource) Keyword(context.Context, string, []string, func(string, int, float64) bool) error {
	return nil
}

func (s *storedSource) ChunkText(_ context.Context, id string, idx int) (string, error) {
	return fmt.Sprint(id, "/", idx), nil
}

// remove drops the items whose index i passes drop.
func (s *storedSource) remove(drop func(i int) bool) {
	var kept []domain.Item
	for i, it := range s.items {
		if !drop(i) {
			kept = append(kept, it)
		}
	}
	s.items = kept
}

// graphEngine loads capsule "c" of src in a new engine keeping graphs in
// dir, and returns it with its graph once built or read.
func graphEngine(t *testing.T, src Source, dim, graphMin int, dir string) (*Engine, *graph) {
	t.Helper()
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: graphMin, GraphDir: dir, GraphWorkers: 1})
	t.Cleanup(e.Close)
	if _, err := e.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	g := waitGraph(t, e, "c")
	if g == nil {
		t.Fatal("no graph")
	}
	return e, g
}

// sameGraph reports how a and b differ in shape (nodes, levels, links).
func sameGraph(a, b *graph) error {
	if len(a.nodes) != len(b.nodes) || a.entry != b.entry || a.top != b.top || a.dead != b.dead {
		return fmt.Errorf("nodes %d/%d, entry %d/%d, top %d/%d, dead %d/%d", len(a.nodes), len(b.nodes), a.entry, b.entry, a.top, b.top, a.dead, b.dead)
	}
	for id := range a.nodes {
		na, nb := &a.nodes[id], &b.nodes[id]
		if na.level != nb.level || na.dead != nb.dead || na.i != nb.i || na.en.item.ID != nb.en.item.ID {
			return fmt.Errorf("node %d differs", id)
		}
		for l := 0; l <= int(na.level); l++ {
			if !slices.Equal(a.links(uint32(id), l), b.links(uint32(id), l)) {
				return fmt.Errorf("node %d: links at level %d differ", id, l)
			}
		}
	}
	return nil
}

// TestGraphFileRoundTrip: a built graph is written to GraphDir, and the next
// engine over the same capsule reads it instead of building: the same
// nodes, levels and links, the same search results.
func TestGraphFileRoundTrip(t *testing.T) {
	const items, per, dim = 300, 10, 32
	src := storedFrom(t, newFakeSource(items, per, dim, 30))
	dir := t.TempDir()
	_, built := graphEngine(t, src, dim, 1000, dir)
	if _, err := os.Stat(GraphPath(dir, "c")); err != nil {
		t.Fatalf("no graph file after the build: %v", err)
	}
	e2, read := graphEngine(t, src, dim, 1000, dir)
	if err := sameGraph(built, read); err != nil {
		t.Fatalf("the graph read back differs: %v", err)
	}
	if read.edits != 0 {
		t.Errorf("the graph read back had %d insertions or removals, want none", read.edits)
	}
	ci := e2.capsule("c")
	for _, q := range newFakeSource(items, per, dim, 30).queries(10) {
		a, _ := built.search(q, 50, nil, 0)
		ci.mu.RLock()
		b, _ := read.search(q, 50, nil, 0)
		ci.mu.RUnlock()
		if !slices.Equal(a, b) {
			t.Fatalf("search results differ after reading the file")
		}
	}
}

// TestGraphFileChangesWhileDown: items removed, changed and added between
// the write and the next load: the removed and changed items' nodes are
// dead (never returned), the changed and added items are inserted, and
// recall@10 against exact search holds; with more than a quarter of the
// nodes gone the graph is built anew.
func TestGraphFileChangesWhileDown(t *testing.T) {
	const items, per, dim = 400, 10, 32
	fake := newFakeSource(items, per, dim, 30)
	src := storedFrom(t, fake)
	dir := t.TempDir()
	graphEngine(t, src, dim, 1000, dir)

	// 5% removed, item 1 changed (new vectors), 20 items added.
	src.remove(func(i int) bool { return i%20 == 3 })
	other := newFakeSource(items+20, per, dim, 30)
	other.seed = 99 // other vectors from the same distribution
	extra := storedFrom(t, other)
	src.vecs["itm_000001"] = extra.vecs["itm_000001"]
	for i := items; i < items+20; i++ {
		id := fmt.Sprintf("itm_%06d", i)
		src.items = append(src.items, domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText, Metadata: map[string]any{"shard": float64(i % 10)}})
		src.vecs[id] = extra.vecs[id]
	}
	e, g := graphEngine(t, src, dim, 1000, dir)
	if want := (items/20 + 1) * per; g.dead != want {
		t.Errorf("dead nodes %d, want %d (removed and changed items)", g.dead, want)
	}
	if want := (items - items/20 + 20) * per; g.live() != want {
		t.Errorf("live nodes %d, want %d", g.live(), want)
	}
	exact := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{ApproxMin: -1, GraphMin: -1})
	if _, err := exact.load(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	found, live := 0, map[string]bool{}
	for _, it := range src.items {
		live[it.ID] = true
	}
	qs := fake.queries(40)
	for _, q := range qs {
		want := map[ref]bool{}
		for _, c := range dense(exact, q, 10, nil) {
			want[c.ref] = true
		}
		for _, c := range dense(e, q, 10, nil) {
			if !live[c.ref.item] {
				t.Fatalf("a removed item %s was returned", c.ref.item)
			}
			if want[c.ref] {
				found++
			}
		}
	}
	if r := float64(found) / float64(10*len(qs)); r < 0.95 {
		t.Errorf("recall@10 after reading the file with changes %.3f, want ≥ 0.95", r)
	}

	// The changed graph was written again (after the load, and by Close
	// if changed since): a third load reads it with nothing to insert.
	e.Close()
	_, g3 := graphEngine(t, src, dim, 1000, dir)
	if g3.edits != 0 || g3.dead != g.dead {
		t.Errorf("after Close wrote the file: %d insertions on reading, %d dead (want 0, %d)", g3.edits, g3.dead, g.dead)
	}

	// A third of the items gone: too many dead nodes, a fresh build.
	src.remove(func(i int) bool { return i%3 == 0 })
	_, g4 := graphEngine(t, src, dim, 1000, dir)
	if g4.dead != 0 || g4.live() != len(src.items)*per {
		t.Errorf("with a third of the items gone: %d dead, %d live nodes; want a fresh graph of %d", g4.dead, g4.live(), len(src.items)*per)
	}
}

// TestGraphFileBehind: a file that holds less than half of the capsule's
// chunks (it grew while the process was down) is not read: the graph is
// built afresh, every item inserted once.
func TestGraphFileBehind(t *testing.T) {
	const items, per, dim = 200, 10, 32
	fake := newFakeSource(items, per, dim, 30)
	src := storedFrom(t, fake)
	dir := t.TempDir()
	e, _ := graphEngine(t, src, dim, 1000, dir)
	if e.GraphRead("c") {
		t.Error("GraphRead of a graph built without a file: true")
	}
	e.Close() // writes the file
	if e2, _ := graphEngine(t, src, dim, 1000, dir); !e2.GraphRead("c") {
		t.Error("GraphRead of a graph read from its file: false")
	}

	more := newFakeSource(3*items, per, dim, 30)
	extra := storedFrom(t, more)
	for i := items; i < 3*items; i++ {
		id := fmt.Sprintf("itm_%06d", i)
		src.items = append(src.items, domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText, Metadata: map[string]any{"shard": float64(i % 10)}})
		src.vecs[id] = extra.vecs[id]
	}
	path := GraphPath(dir, "c")
	ids, ens := make([]string, len(src.items)), make([]*entry, len(src.items))
	for i, it := range src.items {
		ids[i] = it.ID
		ens[i] = &entry{item: it, idxs: make([]int, per)}
	}
	if _, err := loadGraph(context.Background(), path, dim, ids, ens); !errors.Is(err, errGraphBehind) {
		t.Fatalf("loading a file of a third of the chunks: %v, want errGraphBehind", err)
	}
	e3, g := graphEngine(t, src, dim, 1000, dir)
	if e3.GraphRead("c") {
		t.Error("GraphRead of a fresh build beside a file too far behind: true")
	}
	// edits counts items: reading the file would have inserted 2·items.
	if n := 3 * items; g.live() != n*per || g.edits != uint64(n) {
		t.Errorf("graph of %d live nodes after %d item insertions, want a fresh build of %d items", g.live(), g.edits, n)
	}
}

// TestGraphFileUnusable: a file that is cut short, altered, of another
// dimension or not a graph file is refused with errGraphFile, and the
// engine builds the graph instead; a capsule's removal removes its file.
func TestGraphFileUnusable(t *testing.T) {
	const items, per, dim = 200, 10, 16
	src := storedFrom(t, newFakeSource(items, per, dim, 20))
	dir := t.TempDir()
	_, built := graphEngine(t, src, dim, 1000, dir)
	path := GraphPath(dir, "c")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(src.items))
	var ens []*entry
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: -1})
	ci, err := e.load(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range src.items {
		ids[i] = it.ID
		ens = append(ens, ci.items[it.ID])
	}
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0x10
	for name, b := range map[string][]byte{
		"truncated":     good[:len(good)-9],
		"flipped":       flipped,
		"trailing":      append(slices.Clone(good), 0),
		"empty":         nil,
		"not a graph":   []byte("hello, world\n"),
		"header only":   good[:len(graphFileMagic)+24],
		"other version": append([]byte("capsuled-hnsw-9\n"), good[len(graphFileMagic):]...),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadGraph(context.Background(), path, dim, ids, ens); !errors.Is(err, errGraphFile) {
			t.Errorf("%s: loadGraph error %v, want errGraphFile", name, err)
		}
	}
	if _, err := loadGraph(context.Background(), path, dim+1, ids, ens); !errors.Is(err, errGraphFile) {
		t.Errorf("another dimension: loadGraph error %v, want errGraphFile", err)
	}
	// The engine builds instead, and writes a good file again.
	e2, g := graphEngine(t, src, dim, 1000, dir)
	if err := sameGraph(built, g); err != nil {
		t.Errorf("the graph built after a bad file differs from the first build: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || !slices.Equal(b, good) {
		t.Errorf("the bad file was not replaced by the build's (err %v)", err)
	}
	e2.CapsuleRemoved("c")
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file is still there after the capsule was removed: %v", err)
	}
}

// FuzzGraphFile: whatever the file holds, loadGraph returns a graph whose
// links all name nodes, or an error; it never panics.
func FuzzGraphFile(f *testing.F) {
	const items, per, dim = 30, 4, 8
	src := storedFrom(f, newFakeSource(items, per, dim, 4))
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: -1})
	ci, err := e.load(context.Background(), "c")
	if err != nil {
		f.Fatal(err)
	}
	ids := make([]string, len(src.items))
	ens := make([]*entry, len(src.items))
	for i, it := range src.items {
		ids[i], ens[i] = it.ID, ci.items[it.ID]
	}
	g, err := buildGraph(context.Background(), dim, ids, ens, 1)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := g.encode(&buf); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(graphFileMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := readGraph(context.Background(), bufio.NewReader(bytes.NewReader(b)), int64(len(b)), "fuzz", dim, ids[:items/2], ens[:items/2])
		if err != nil {
			return
		}
		for id := range g.nodes {
			for l := 0; l <= int(g.nodes[id].level); l++ {
				for _, x := range g.links(uint32(id), l) {
					if int(x) >= len(g.nodes) {
						t.Fatalf("node %d links to %d of %d nodes", id, x, len(g.nodes))
					}
				}
			}
		}
		g.search(make([]float32, dim), 10, nil, 0)
	})
}

// TestGraphParallelBuild: a graph built on several goroutines has valid
// links (each names another node, once), every node reachable from the entry
// point at level 0, and recall@10 against exact search of at least 0.95, as
// the one-goroutine build.
func TestGraphParallelBuild(t *testing.T) {
	const items, per, dim = 600, 10, 32
	src := storedFrom(t, newFakeSource(items, per, dim, 40))
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: -1})
	ci, err := e.load(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(src.items))
	ens := make([]*entry, len(src.items))
	for i, it := range src.items {
		ids[i], ens[i] = it.ID, ci.items[it.ID]
	}
	qs := newFakeSource(items, per, dim, 40).queries(40)
	for _, workers := range []int{1, 4} {
		g, err := buildGraph(context.Background(), dim, ids, ens, workers)
		if err != nil {
			t.Fatal(err)
		}
		if g.locks != nil {
			t.Errorf("%d workers: the build's locks were kept", workers)
		}
		for id := range g.nodes {
			for l := 0; l <= int(g.nodes[id].level); l++ {
				seen := map[uint32]bool{}
				for _, x := range g.links(uint32(id), l) {
					if int(x) >= len(g.nodes) || x == uint32(id) || seen[x] || int(g.nodes[x].level) < l {
						t.Fatalf("%d workers: node %d has a bad link %d at level %d", workers, id, x, l)
					}
					seen[x] = true
				}
			}
		}
		reached := map[uint32]bool{uint32(g.entry): true}
		for todo := []uint32{uint32(g.entry)}; len(todo) > 0; {
			id := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, x := range g.links(id, 0) {
				if !reached[x] {
					reached[x] = true
					todo = append(todo, x)
				}
			}
		}
		if len(reached) < len(g.nodes)*99/100 {
			t.Errorf("%d workers: %d of %d nodes reachable at level 0", workers, len(reached), len(g.nodes))
		}
		found := 0
		for _, q := range qs {
			var all []gcand
			for id := range g.nodes {
				all = append(all, gcand{vecmath.Dot(q, g.vec(uint32(id))), uint32(id)})
			}
			sortBestFirst(all)
			want := map[uint32]bool{}
			for _, c := range all[:10] {
				want[c.id] = true
			}
			res, _ := g.search(q, 64, nil, 0)
			for _, c := range res[:10] {
				if want[c.id] {
					found++
				}
			}
		}
		if r := float64(found) / float64(10*len(qs)); r < 0.95 {
			t.Errorf("%d workers: recall@10 %.3f, want at least 0.95", workers, r)
		}
	}
}

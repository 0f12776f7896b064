package retrieval

import (
	"context"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"capsuled/internal/vecmath"
)

// summedSource is a fake VectorSummer over a storedSource: it counts the
// vectors it hands out, so a test sees what a load read from the "store".
type summedSource struct {
	*storedSource
	read atomic.Int64
}

func (s *summedSource) ChunkVectors(ctx context.Context, c string, fn func(string, int, []float32) error) error {
	return s.storedSource.ChunkVectors(ctx, c, func(id string, idx int, v []float32) error {
		s.read.Add(1)
		return fn(id, idx, v)
	})
}

func (s *summedSource) VectorSums(_ context.Context, _ string, fn func(string, int, uint32) error) error {
	for _, it := range s.items {
		var crc uint32
		for _, v := range s.vecs[it.ID] {
			crc = vecmath.ChecksumUpdate(crc, v)
		}
		if err := fn(it.ID, len(s.vecs[it.ID]), crc); err != nil {
			return err
		}
	}
	return nil
}

func (s *summedSource) ItemVectors(_ context.Context, ids []string, fn func(string, int, []float32) error) error {
	for _, id := range ids {
		for idx, v := range s.vecs[id] {
			s.read.Add(1)
			if err := fn(id, idx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// vecEngine loads capsule "c" of src in a new engine keeping its files in
// dir (no graph, vectors files from 100 chunks).
func vecEngine(t *testing.T, src Source, dim int, dir string) (*Engine, *capIndex) {
	t.Helper()
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: -1, GraphDir: dir, ApproxMin: 500})
	e.vecFileMin = 100
	t.Cleanup(e.Close)
	ci, err := e.load(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	return e, ci
}

// mappedShare is the share of ci's entries whose vectors are not on the
// Go heap but views of vf's mapping.
func mappedEntries(ci *capIndex, vf []byte) int {
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	n := 0
	for _, en := range ci.items {
		if len(en.vecs) > 0 && inside(vf, en.vecs) {
			n++
		}
	}
	return n
}

func inside(b []byte, v []float32) bool {
	if len(b) == 0 {
		return false
	}
	lo, hi := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&b[len(b)-1]))
	first, last := uintptr(unsafe.Pointer(&v[0])), uintptr(unsafe.Pointer(&v[len(v)-1]))
	return first >= lo && last+3 <= hi
}

// sameDense checks that two engines' dense top 20 are equal, refs and
// scores, for the queries.
func sameDense(t *testing.T, a, b *Engine, qs [][]float32) {
	t.Helper()
	for _, e := range []*Engine{a, b} {
		if _, err := e.load(context.Background(), "c"); err != nil {
			t.Fatal(err)
		}
	}
	for i, q := range qs {
		x, y := dense(a, q, 20, nil), dense(b, q, 20, nil)
		if len(x) != len(y) {
			t.Fatalf("query %d: %d hits against %d", i, len(x), len(y))
		}
		for j := range x {
			if x[j].ref != y[j].ref || x[j].dense != y[j].dense {
				t.Fatalf("query %d hit %d: %v %v against %v %v", i, j, x[j].ref, x[j].dense, y[j].ref, y[j].dense)
			}
		}
	}
}

// TestVectorFileRoundTrip: the first load reads every vector from the
// store and writes the vectors file; the next engine maps it, reads no
// vector from the store, and answers with the same hits and scores
// (approximate scan included: the codes come from the file too).
func TestVectorFileRoundTrip(t *testing.T) {
	const items, per, dim = 120, 8, 32
	fake := newFakeSource(items, per, dim, 12)
	src := &summedSource{storedSource: storedFrom(t, fake)}
	dir := t.TempDir()
	e1, _ := vecEngine(t, src, dim, dir)
	if got := src.read.Load(); got != items*per {
		t.Fatalf("first load read %d vectors from the store, want %d", got, items*per)
	}
	e1.Close() // waits for the write
	if _, err := os.Stat(VectorsPath(dir, "c")); err != nil {
		t.Fatalf("no vectors file after the first load: %v", err)
	}
	src.read.Store(0)
	e2, ci2 := vecEngine(t, src, dim, dir)
	if got := src.read.Load(); got != 0 {
		t.Errorf("second load read %d vectors from the store, want 0", got)
	}
	b, err := mapFile(VectorsPath(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if n := mappedEntries(ci2, b); n != 0 {
		t.Errorf("%d entries are views of a second mapping", n) // sanity: each load maps its own
	}
	if ci2.codeWords == 0 || len(ci2.mean) != dim {
		t.Errorf("second load has no codes (%d words)", ci2.codeWords)
	}
	plain := plainEngine(t, storedFrom(t, fake), dim)
	sameDense(t, plain, e2, fake.queries(20))
}

// TestVectorFileChangesWhileDown: items changed, removed and added in the
// store after the file was written are read from the store (only those),
// the others mapped; the answers are those of an engine that read
// everything from the store.
func TestVectorFileChangesWhileDown(t *testing.T) {
	const items, per, dim = 120, 8, 32
	fake := newFakeSource(items, per, dim, 12)
	src := &summedSource{storedSource: storedFrom(t, fake)}
	dir := t.TempDir()
	e1, _ := vecEngine(t, src, dim, dir)
	e1.Close()
	// Change item 3's vectors, remove item 5, add a copy of item 7 under a
	// new id.
	id3 := src.items[3].ID
	changed := slices.Clone(src.vecs[id3])
	changed[0] = slices.Clone(src.vecs[src.items[9].ID][2])
	src.vecs[id3] = changed
	src.remove(func(i int) bool { return i == 5 })
	added := src.items[6]
	added.ID = "itm_zzz"
	src.items = append(src.items, added)
	src.vecs[added.ID] = src.vecs[src.items[6].ID]
	src.read.Store(0)
	e2, _ := vecEngine(t, src, dim, dir)
	if got := src.read.Load(); got != 2*per {
		t.Errorf("load read %d vectors from the store, want %d (the changed and the added item)", got, 2*per)
	}
	plain := plainEngine(t, src.storedSource, dim)
	sameDense(t, plain, e2, fake.queries(20))
	// The file is written anew with the changes: a third load reads nothing.
	e2.Close()
	src.read.Store(0)
	e3, _ := vecEngine(t, src, dim, dir)
	if got := src.read.Load(); got != 0 {
		t.Errorf("third load read %d vectors from the store, want 0", got)
	}
	sameDense(t, plain, e3, fake.queries(20))
}

// TestVectorFileDamaged: a file whose table does not parse is ignored
// (everything read from the store); one whose vectors' bytes were changed
// on disk is caught by the background check, which reads the damaged
// item from the store again; either way the answers are the store's.
func TestVectorFileDamaged(t *testing.T) {
	const items, per, dim = 120, 8, 32
	fake := newFakeSource(items, per, dim, 12)
	src := &summedSource{storedSource: storedFrom(t, fake)}
	dir := t.TempDir()
	e1, _ := vecEngine(t, src, dim, dir)
	e1.Close()
	path := VectorsPath(dir, "c")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	plain := plainEngine(t, src.storedSource, dim)

	// The table: one byte of an item id.
	bad := slices.Clone(good)
	bad[len(vecFileMagic)+24+4*dim+6] ^= 1
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	src.read.Store(0)
	e2, _ := vecEngine(t, src, dim, dir)
	if got := src.read.Load(); got != items*per {
		t.Errorf("a damaged table: %d vectors read from the store, want %d", got, items*per)
	}
	sameDense(t, plain, e2, fake.queries(10))
	e2.Close()

	// The vectors: the last byte of the first item's first vector.
	vf, err := parseVecFile(aligned(good), dim)
	if err != nil {
		t.Fatal(err)
	}
	at := alignUp(vecTableEnd(t, good)) + 4*dim - 1
	bad = slices.Clone(good)
	bad[at] ^= 0x40
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	src.read.Store(0)
	e3, ci3 := vecEngine(t, src, dim, dir)
	first := vf.order[0]
	// VectorsChecked returns once the check has read the item again.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e3.VectorsChecked(ctx, "c"); err != nil {
		t.Fatalf("VectorsChecked: %v", err)
	}
	ci3.mu.RLock()
	en := ci3.items[first]
	fixed := en != nil && vecmath.Checksum(en.vecs) == en.sum && en.sum == vf.items[first].crc
	ci3.mu.RUnlock()
	if !fixed {
		t.Fatal("the damaged item was not read again from the store when VectorsChecked returned")
	}
	if err := e3.VectorsChecked(ctx, "other"); err != nil {
		t.Fatalf("VectorsChecked of a capsule never loaded: %v", err)
	}
	if got := src.read.Load(); got != per {
		t.Errorf("damaged vectors: %d read from the store, want %d (one item)", got, per)
	}
	sameDense(t, plain, e3, fake.queries(10))
}

// vecTableEnd is where a vectors file's table ends (after its CRC).
func vecTableEnd(t *testing.T, b []byte) int {
	t.Helper()
	r := &breader{b: b}
	r.bytes(len(vecFileMagic))
	dim, words, n := int(r.u32()), int(r.u32()), int(r.u32())
	r.u32()
	r.u64()
	if words > 0 {
		r.bytes(4 * dim)
	}
	for range n {
		r.bytes(int(r.u32()))
		c := int(r.u32())
		r.u32()
		r.bytes(4 * c)
	}
	r.u32()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.off
}

// FuzzVectorFile: parseVecFile never panics, and what it accepts is
// consistent: every item's views lie inside the file and have its count.
func FuzzVectorFile(f *testing.F) {
	const dim = 8
	fake := newFakeSource(6, 3, dim, 2)
	src := storedFrom(f, fake)
	var ens []vecSnap
	for _, it := range src.items {
		s := vecSnap{id: it.ID, sum: 0}
		for idx, v := range src.vecs[it.ID] {
			s.idxs = append(s.idxs, idx)
			s.vecs = append(s.vecs, v...)
			s.codes = append(s.codes, uint64(idx))
		}
		s.sum = vecmath.Checksum(s.vecs)
		ens = append(ens, s)
	}
	for _, words := range []int{0, 1} {
		path := f.TempDir() + "/v"
		if err := writeVecFile(path, dim, words, 18, make([]float32, dim), ens); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(vecFileMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = aligned(b)
		vf, err := parseVecFile(b, dim)
		if err != nil {
			return
		}
		for id, it := range vf.items {
			if len(it.idxs) != it.count || len(it.vecs) != it.count*dim || (vf.codeWords > 0 && len(it.codes) != it.count*vf.codeWords) {
				t.Fatalf("item %q: %d idxs, %d vector values, %d codes for count %d", id, len(it.idxs), len(it.vecs), len(it.codes), it.count)
			}
			if it.count > 0 && !inside(b, it.vecs) {
				t.Fatalf("item %q: vectors outside the file", id)
			}
		}
	})
}

// aligned copies b to memory aligned as a mapping is.
func aligned(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	w := make([]uint64, (len(b)+7)/8)
	out := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(b))
	copy(out, b)
	return out
}

// plainEngine is an engine over src with neither files nor graph, the
// answers the tests compare a file-backed engine with.
func plainEngine(t *testing.T, src Source, dim int) *Engine {
	t.Helper()
	e := New(src, fixedEmbedder{make([]float32, dim)}, dim, Config{GraphMin: -1, ApproxMin: 500})
	t.Cleanup(e.Close)
	return e
}

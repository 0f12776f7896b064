package retrieval

import (
	"context"
	"os"
	"slices"
	"strings"
	"unsafe"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
)

// VectorSummer is a Source that keeps, per item, the number of its chunk
// vectors and their CRC-32C (vecmath.Checksum of the vectors in idx
// order), and reads chosen items' vectors: what a vectors file is checked
// against, and what replaces the items it does not hold.
type VectorSummer interface {
	// VectorSums calls fn with each searchable item of the capsule, its
	// vector count and their checksum.
	VectorSums(ctx context.Context, capsule string, fn func(itemID string, count int, crc uint32) error) error
	// ItemVectors calls fn with every chunk vector of the items, by item
	// and idx.
	ItemVectors(ctx context.Context, items []string, fn func(itemID string, idx int, vec []float32) error) error
}

// DefaultVectorFileMin is the number of chunks from which a capsule keeps
// its vectors in a vectors file (vecfile.go) where the Engine has a
// Config.GraphDir and its Source is a VectorSummer: smaller capsules load
// from the store in well under a second.
const DefaultVectorFileMin = 10000

type vsum struct {
	count int
	crc   uint32
}

// vectorSums is a VectorSums read running in the background.
type vectorSums struct {
	stop context.CancelFunc
	done chan struct{}
	sums map[string]vsum
	err  error
}

// readVectorSums starts reading the capsule's vector sums, where its
// vectors may be kept in a vectors file (nil where they cannot): load
// reads them beside the capsule's items, before it knows whether the
// capsule is large enough to keep a file. At a million chunks each read
// is a walk of 130,000 items (0.5 s for the sums on SQLite); one after the
// other they made most of a cold start.
func (e *Engine) readVectorSums(ctx context.Context, capsule string) *vectorSums {
	vs, ok := e.src.(VectorSummer)
	if !ok || !vecFiles || e.cfg.GraphDir == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &vectorSums{stop: cancel, done: make(chan struct{}), sums: map[string]vsum{}}
	go func() {
		defer close(r.done)
		r.err = vs.VectorSums(ctx, capsule, func(id string, count int, crc uint32) error {
			r.sums[id] = vsum{count, crc}
			return nil
		})
	}()
	return r
}

// wait returns the sums once read.
func (r *vectorSums) wait() (map[string]vsum, error) {
	<-r.done
	return r.sums, r.err
}

// cancel stops the read if it still runs, and waits for it (nil: none).
func (r *vectorSums) cancel() {
	if r != nil {
		r.stop()
		<-r.done
	}
}

// fillVectors gives the entries of ci.items (just made from items, under
// ci.mu) their vectors: views of the capsule's vectors file for items
// whose vector count and checksum there (read by readVectorSums, nil where
// the Source keeps none) are the store's, read from the store for the
// others. It returns the file used (nil: none) and how many vectors came
// from the store.
func (e *Engine) fillVectors(ctx context.Context, ci *capIndex, items []domain.Item, read *vectorSums) (*vecFile, int, error) {
	total := 0
	for _, it := range items {
		total += it.ChunkCount
	}
	vs, _ := e.src.(VectorSummer)
	ci.vecFile = read != nil && total >= e.vecFileMin
	if !ci.vecFile {
		n, err := e.storeVectors(ctx, ci, nil)
		return nil, n, err
	}
	sums, err := read.wait()
	if err != nil {
		return nil, 0, err
	}
	var vf *vecFile
	if b, err := mapFile(VectorsPath(e.cfg.GraphDir, ci.name)); err == nil && b != nil {
		vf, _ = parseVecFile(b, e.dim) // unusable: read from the store, and written anew
	}
	var missing []string
	mapped := 0
	for id, en := range ci.items {
		s := sums[id]
		if s.count == 0 {
			continue // no vectors (yet)
		}
		if vf != nil {
			if it, ok := vf.items[id]; ok && it.count == s.count && it.crc == s.crc {
				en.idxs, en.vecs, en.codes, en.sum = it.idxs, it.vecs, it.codes, it.crc
				ci.chunks += it.count
				mapped++
				continue
			}
		}
		missing = append(missing, id)
	}
	if len(missing) == 0 {
		return vf, 0, nil
	}
	only := make(map[string]bool, len(missing))
	for _, id := range missing {
		only[id] = true
	}
	if mapped > 0 && 2*len(missing) < len(ci.items) {
		slices.Sort(missing)
		n, err := e.storeVectors(ctx, ci, only, func(fn func(string, int, []float32) error) error {
			return vs.ItemVectors(ctx, missing, fn)
		})
		return vf, n, err
	}
	n, err := e.storeVectors(ctx, ci, only)
	return vf, n, err
}

// storeVectors reads the vectors of ci's entries from the store (of the
// items in only, when not nil) into new heap slices: through read, when
// given, else the whole capsule's ChunkVectors. It returns how many it
// read.
func (e *Engine) storeVectors(ctx context.Context, ci *capIndex, only map[string]bool, read ...func(fn func(string, int, []float32) error) error) (int, error) {
	for id, en := range ci.items {
		if (only == nil || only[id]) && en.item.ChunkCount > 0 {
			// Room for the item's vectors at once: appended a chunk at a
			// time they left a quarter of the index's heap as spare
			// capacity (and as much again in garbage during the load).
			en.idxs = make([]int, 0, en.item.ChunkCount)
			en.vecs = make([]float32, 0, en.item.ChunkCount*e.dim)
		}
	}
	n := 0
	fn := func(id string, idx int, vec []float32) error {
		en := ci.items[id]
		if en == nil || len(vec) != e.dim || (only != nil && !only[id]) {
			return nil
		}
		en.idxs = append(en.idxs, idx)
		en.vecs = append(en.vecs, vec...)
		n++
		return nil
	}
	var err error
	if len(read) > 0 {
		err = read[0](fn)
	} else {
		err = e.src.ChunkVectors(ctx, ci.name, fn)
	}
	if err != nil {
		return 0, err
	}
	for id, en := range ci.items {
		if only != nil && !only[id] {
			continue
		}
		if len(en.vecs) == 0 {
			en.idxs, en.vecs = nil, nil // no vectors stored (yet): no room kept
		}
		en.sum = vecmath.Checksum(en.vecs)
		ci.chunks += len(en.idxs)
	}
	return n, nil
}

// maybeSaveVectors writes the capsule's vectors file in the background
// when the capsule keeps one and its entries changed since the file last
// matched them (or no file does). Callers hold ci.mu for writing.
func (e *Engine) maybeSaveVectors(ci *capIndex) {
	if !ci.vecFile || ci.vecSaving || ci.vecSaved == ci.vecEdits || e.life.Err() != nil {
		return
	}
	ci.vecSaving = true
	e.builds.Add(1)
	go func() {
		defer e.builds.Done()
		e.saveVectors(ci)
	}()
}

// saveVectors writes the capsule's vectors file from a snapshot of its
// entries, taken under the read lock (the write itself runs without it:
// entries' vectors never change in place).
func (e *Engine) saveVectors(ci *capIndex) {
	ci.mu.RLock()
	if !ci.loaded {
		ci.mu.RUnlock()
		return
	}
	edits := ci.vecEdits
	words, codedAt, mean := ci.codeWords, ci.codedAt, ci.mean
	ens := make([]vecSnap, 0, len(ci.items))
	for id, en := range ci.items {
		if len(en.idxs) > 0 {
			ens = append(ens, vecSnap{id: id, idxs: en.idxs, vecs: en.vecs, codes: en.codes, sum: en.sum})
		}
	}
	ci.mu.RUnlock()
	slices.SortFunc(ens, func(a, b vecSnap) int { return strings.Compare(a.id, b.id) })
	err := writeVecFile(VectorsPath(e.cfg.GraphDir, ci.name), e.dim, words, codedAt, mean, ens)
	ci.mu.Lock()
	defer ci.mu.Unlock()
	ci.vecSaving = false
	if err == nil {
		ci.vecSaved = edits // else the next load reads the store again
	}
}

// verifyAsync checks, in the background, the vectors and codes of ci's
// entries that are views of vf against the CRCs vf lists, a stretch of
// the file at a time, releasing each stretch's pages from the process's
// resident set once checked (they stay in the page cache); entries found
// damaged are read again from the store. Callers hold ci.mu for writing.
func (e *Engine) verifyAsync(ci *capIndex, vf *vecFile) {
	type job struct {
		id string
		en *entry
	}
	var jobs []job
	for _, id := range vf.order {
		if en := ci.items[id]; en != nil && len(en.vecs) > 0 && len(vf.items[id].vecs) > 0 && &en.vecs[0] == &vf.items[id].vecs[0] {
			jobs = append(jobs, job{id, en})
		}
	}
	if len(jobs) == 0 {
		return
	}
	ctx := e.life
	checked := make(chan struct{})
	ci.vecChecked = checked
	e.builds.Add(1)
	go func() {
		defer e.builds.Done()
		defer close(checked)
		var bad []job
		from := 0 // the start of the stretch not yet released
		base := uintptr(unsafe.Pointer(&vf.data[0]))
		for i, j := range jobs {
			if ctx.Err() != nil {
				return
			}
			if !checkMapped(vf.items[j.id], e.dim, vf.mean, vf.codeWords) {
				bad = append(bad, j)
			}
			end := int(uintptr(unsafe.Pointer(&j.en.vecs[len(j.en.vecs)-1])) - base + 4)
			if end-from >= 64<<20 || i == len(jobs)-1 {
				releasePages(pageSpan(vf.data, from, end))
				from = end
			}
		}
		if len(bad) == 0 {
			return
		}
		ids := make([]string, len(bad))
		for i, j := range bad {
			ids[i] = j.id
		}
		read := map[string]*entry{}
		vs := e.src.(VectorSummer)
		err := vs.ItemVectors(ctx, ids, func(id string, idx int, vec []float32) error {
			if len(vec) != e.dim {
				return nil
			}
			en := read[id]
			if en == nil {
				en = &entry{}
				read[id] = en
			}
			en.idxs = append(en.idxs, idx)
			en.vecs = append(en.vecs, vec...)
			return nil
		})
		if err != nil {
			return
		}
		ci.mu.Lock()
		defer ci.mu.Unlock()
		for _, j := range bad {
			if ci.items[j.id] != j.en {
				continue // changed meanwhile
			}
			en := read[j.id]
			if en == nil {
				en = &entry{}
			}
			en.item = j.en.item
			en.sum = vecmath.Checksum(en.vecs)
			ci.chunks += len(en.idxs) - len(j.en.idxs)
			ci.items[j.id] = en
			if ci.codeWords > 0 {
				ci.encode(en, e.dim)
			}
			ci.vecEdits++
			ci.put(en)
			e.graphChanged(ci, j.id)
		}
		e.maybeSaveVectors(ci)
	}()
}

// VectorsChecked waits until the background check of the capsule's
// mapped vectors file, which a load starts (verifyAsync: seconds of CPU at
// a million chunks), has ended; at once where none runs. Benchmarks call
// it so that query timings do not include the check.
func (e *Engine) VectorsChecked(ctx context.Context, capsule string) error {
	e.mu.Lock()
	ci := e.index[capsule]
	e.mu.Unlock()
	if ci == nil {
		return nil
	}
	ci.mu.RLock()
	ch := ci.vecChecked
	ci.mu.RUnlock()
	return waitClosed(ctx, ch)
}

// pageSpan is the part of b[from:to] made of whole pages of the mapping
// (b starts on a page).
func pageSpan(b []byte, from, to int) []byte {
	page := os.Getpagesize()
	from = (from + page - 1) / page * page
	to = to / page * page
	if to <= from {
		return nil
	}
	return b[from:to]
}

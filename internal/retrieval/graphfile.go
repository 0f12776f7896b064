package retrieval

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"capsuled/internal/atomicfile"
	"capsuled/internal/vecmath"
)

// Graph files keep a capsule's HNSW graph between runs (Config.GraphDir),
// so that a restart reads it back in seconds rather than rebuilding it
// (about 212 CPU-s per 100,000 chunks). A file holds links, not vectors:
// the graph's nodes are named by item id, the item's chunk count and a
// CRC-32C of its vectors, and a node is attached to the loaded capsule's
// vectors only where all three match. Nodes of items removed or changed
// since the file was written are kept dead (they still route searches, on
// zero vectors, and are never returned), items indexed since are inserted,
// and a graph a quarter of whose nodes are dead is rebuilt instead, as at
// run time. A file that does not parse, or whose checksum or parameters do
// not match, is ignored (the graph is built).
//
// Layout, little-endian: the magic graphFileMagic; dim, graphM, the node
// count, the entry point (int32), the top level and the group count (uint32
// each); per group (an item's run of consecutive nodes): the id's length
// (uint32) and bytes, the node count (uint32), dead (one byte) and the
// vectors' CRC-32C (uint32); per node: its level and level-0 link count (a
// byte each), those links (uint32 each), then per upper level a link count
// (a byte) and the links; last, the CRC-32C of everything before it.
const graphFileMagic = "capsuled-hnsw-1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// GraphPath is the file of a capsule's graph in a Config.GraphDir: named by
// a hash of the capsule's name, which may hold any character.
func GraphPath(dir, capsule string) string {
	h := sha256.Sum256([]byte(capsule))
	return filepath.Join(dir, hex.EncodeToString(h[:16])+".hnsw")
}

// vecsCRC is the CRC-32C of vectors as stored (vecmath.Checksum).
func vecsCRC(v []float32) uint32 { return vecmath.Checksum(v) }

// ggroup is one run of nodes that one addEntry call inserted: rows 0…n-1
// of an entry.
type ggroup struct {
	first, n int
}

// groups returns the graph's runs of nodes in node order.
func (g *graph) groups() []ggroup {
	var out []ggroup
	for id := 0; id < len(g.nodes); {
		en := g.nodes[id].en
		j := id + 1
		for j < len(g.nodes) && g.nodes[j].en == en && int(g.nodes[j].i) == j-id {
			j++
		}
		out = append(out, ggroup{id, j - id})
		id = j
	}
	return out
}

// save writes the graph to path (through a temporary file renamed over it,
// so that a reader never sees half a file). Callers keep the graph from
// changing meanwhile (the capsule's read lock).
func (g *graph) save(path string) error {
	if err := atomicfile.Write(path, ".graph-*", g.encode); err != nil {
		return fmt.Errorf("graph file: %w", err)
	}
	return nil
}

// encode writes the graph in the file's layout to bw.
func (g *graph) encode(bw io.Writer) error {
	sum := crc32.New(castagnoli)
	w := &gwriter{w: io.MultiWriter(bw, sum)}
	w.bytes([]byte(graphFileMagic))
	gs := g.groups()
	w.u32(uint32(g.dim))
	w.u32(graphM)
	w.u32(uint32(len(g.nodes)))
	w.u32(uint32(g.entry))
	w.u32(uint32(g.top))
	w.u32(uint32(len(gs)))
	for _, gr := range gs {
		n := &g.nodes[gr.first]
		id := n.en.item.ID
		w.u32(uint32(len(id)))
		w.bytes([]byte(id))
		w.u32(uint32(gr.n))
		if n.dead {
			w.bytes([]byte{1})
			w.u32(0)
		} else {
			w.bytes([]byte{0})
			if gr.n == len(n.en.idxs) {
				w.u32(n.en.sum) // without reading the vectors (mapped: not resident)
			} else {
				w.u32(vecsCRC(n.en.vecs[:gr.n*g.dim]))
			}
		}
	}
	for id := range g.nodes {
		n := &g.nodes[id]
		w.bytes([]byte{n.level, n.n0})
		for _, x := range g.links(uint32(id), 0) {
			w.u32(x)
		}
		for _, ls := range n.up {
			w.bytes([]byte{uint8(len(ls))})
			for _, x := range ls {
				w.u32(x)
			}
		}
	}
	if w.err == nil {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], sum.Sum32())
		_, w.err = bw.Write(b[:])
	}
	return w.err
}

// gwriter writes little-endian fields, keeping the first error.
type gwriter struct {
	w   io.Writer
	err error
	buf [4]byte
}

func (w *gwriter) bytes(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *gwriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(w.buf[:], v)
	w.bytes(w.buf[:])
}

// errGraphFile is a graph file that cannot be used; errGraphBehind one
// that covers too little of the capsule to be worth reading.
var (
	errGraphFile   = errors.New("graph file unusable")
	errGraphBehind = errors.New("graph file behind the capsule")
)

// loadGraph reads the graph file at path over the capsule's entries (ids
// and ens, as buildGraph takes them): its nodes of entries that still match
// are live, the others dead on zero vectors; entries the file lacks are
// inserted. It returns errGraphFile (wrapped) for a file that does not
// parse, errGraphBehind (wrapped) for one of fewer nodes than half the
// entries' chunks, and fs.ErrNotExist when there is none.
func loadGraph(ctx context.Context, path string, dim int, ids []string, ens []*entry) (*graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readGraph(ctx, bufio.NewReaderSize(f, 1<<20), st.Size(), path, dim, ids, ens)
}

// readGraph is loadGraph over the size bytes src holds (path names them in
// errors).
func readGraph(ctx context.Context, src *bufio.Reader, size int64, path string, dim int, ids []string, ens []*entry) (*graph, error) {
	sum := crc32.New(castagnoli)
	r := &greader{r: src, sum: sum}
	if string(r.bytes(len(graphFileMagic))) != graphFileMagic || r.u32() != uint32(dim) || r.u32() != graphM {
		return nil, fmt.Errorf("%w: %s: another format, dimension or graphM", errGraphFile, path)
	}
	nNodes, entryPt, top, nGroups := int(r.u32()), int32(r.u32()), int(r.u32()), int(r.u32())
	// Every node takes at least two bytes of the file: a bound on what to
	// allocate before the checksum is known.
	if r.err != nil || nNodes < 0 || int64(nNodes)*2 > size || nGroups > nNodes || top > 30 || int(entryPt) >= nNodes || (nNodes > 0) != (entryPt >= 0) {
		return nil, fmt.Errorf("%w: %s: bad header", errGraphFile, path)
	}
	// A file that holds less than half the capsule's chunks (the capsule
	// grew while the process was down) is left for a fresh build: the build
	// runs on every core, where the inserts after reading run on one.
	chunks := 0
	for _, en := range ens {
		chunks += len(en.idxs)
	}
	if 2*nNodes < chunks {
		return nil, fmt.Errorf("%w: %s: %d nodes for %d chunks", errGraphBehind, path, nNodes, chunks)
	}
	byID := make(map[string]*entry, len(ids))
	for j, id := range ids {
		byID[id] = ens[j]
	}
	g := newGraph(dim)
	g.nodes = make([]gnode, 0, nNodes)
	g.links0 = make([]uint32, nNodes*graphM0)
	g.entry, g.top = entryPt, top
	var zeros []float32
	for range nGroups {
		idLen := int(r.u32())
		if r.err != nil || idLen > 1<<16 {
			return nil, fmt.Errorf("%w: %s: bad group", errGraphFile, path)
		}
		id := string(r.bytes(idLen))
		n := int(r.u32())
		dead := r.bytes(1)[0] != 0
		crc := r.u32()
		if r.err != nil || n < 1 || len(g.nodes)+n > nNodes {
			return nil, fmt.Errorf("%w: %s: bad group", errGraphFile, path)
		}
		en := byID[id]
		_, taken := g.first[id]
		if dead || en == nil || taken || len(en.idxs) != n || en.sum != crc {
			// Removed or changed since: dead nodes on zero vectors.
			if len(zeros) < n*dim {
				zeros = make([]float32, n*dim)
			}
			en = &entry{vecs: zeros[:n*dim]}
			g.dead += n
		} else {
			g.first[id] = uint32(len(g.nodes))
		}
		for i := range n {
			g.nodes = append(g.nodes, gnode{en: en, i: int32(i), dead: en.idxs == nil})
		}
	}
	if len(g.nodes) != nNodes {
		return nil, fmt.Errorf("%w: %s: %d nodes in groups, %d in the header", errGraphFile, path, len(g.nodes), nNodes)
	}
	for id := range g.nodes {
		if id%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		n := &g.nodes[id]
		hdr := r.bytes(2)
		if r.err != nil || hdr[0] > 30 || int(hdr[1]) > graphM0 {
			return nil, fmt.Errorf("%w: %s: bad node", errGraphFile, path)
		}
		n.level, n.n0 = hdr[0], hdr[1]
		r.links(g.links0[id*graphM0:id*graphM0+int(n.n0)], nNodes)
		if n.level > 0 {
			n.up = make([][]uint32, n.level)
			for l := range n.up {
				c := int(r.bytes(1)[0])
				if c > graphM {
					r.fail()
					c = 0
				}
				n.up[l] = make([]uint32, c, graphM)
				r.links(n.up[l], nNodes)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("%w: %s: bad node", errGraphFile, path)
		}
	}
	want := sum.Sum32()
	var tail [4]byte
	if _, err := io.ReadFull(r.r, tail[:]); err != nil || binary.LittleEndian.Uint32(tail[:]) != want || r.err != nil {
		return nil, fmt.Errorf("%w: %s: checksum", errGraphFile, path)
	}
	if _, err := r.r.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s: bytes after the checksum", errGraphFile, path)
	}
	if g.entry >= 0 && int(g.nodes[g.entry].level) != g.top {
		return nil, fmt.Errorf("%w: %s: entry point not at the top level", errGraphFile, path)
	}
	for id := range g.nodes {
		for l := 0; l <= int(g.nodes[id].level); l++ {
			for _, x := range g.links(uint32(id), l) {
				if int(g.nodes[x].level) < l {
					return nil, fmt.Errorf("%w: %s: a link at level %d to a node of level %d", errGraphFile, path, l, g.nodes[x].level)
				}
			}
		}
	}
	// Entries indexed since the file was written.
	for j, id := range ids {
		if _, ok := g.first[id]; !ok {
			if j%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			g.addEntry(id, ens[j])
		}
	}
	return g, nil
}

// greader reads little-endian fields, checksumming what it reads and
// keeping the first error.
type greader struct {
	r   *bufio.Reader
	sum hash.Hash32
	err error
	buf []byte
}

func (r *greader) fail() {
	if r.err == nil {
		r.err = errGraphFile
	}
}

func (r *greader) bytes(n int) []byte {
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if r.err != nil {
		clear(b)
		return b
	}
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = err
		clear(b)
		return b
	}
	r.sum.Write(b)
	return b
}

func (r *greader) u32() uint32 { return binary.LittleEndian.Uint32(r.bytes(4)) }

// links reads len(out) node ids, each below n.
func (r *greader) links(out []uint32, n int) {
	b := r.bytes(4 * len(out))
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
		if int(out[i]) >= n {
			r.fail()
		}
	}
}

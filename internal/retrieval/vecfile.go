package retrieval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"unsafe"

	"capsuled/internal/atomicfile"
	"capsuled/internal/vecmath"
)

// Vectors files keep a capsule's chunk vectors and sign codes between runs
// and off the Go heap (Config.GraphDir, beside the graph file): a load maps
// the file into memory and takes each item's vectors from it where the
// item's vector count and CRC-32C in the file equal those the store keeps
// (VectorSummer), reading only the other items' vectors from the store.
// Mapped pages are the kernel's page cache: they are read on first touch,
// shared with the cache, and dropped under memory pressure, not held by
// the process as the Go heap is. A file is written (through a temporary
// file and a rename) after a load that read vectors from the store, and at
// Close when items changed since; the entries then point into the new
// mapping. Mappings stay until the process ends: graph nodes of removed
// items may still point into an old one.
//
// Layout, native little-endian (no file is kept on big-endian machines):
// the magic vecFileMagic; dim, code words (0: no codes), the item count,
// the chunks the mean was computed over (uint32 each), the chunk count
// (uint64); the mean (dim float32, when codes are kept); per item the id's
// length (uint32) and bytes, its vector count and CRC-32C (uint32 each)
// and its chunks' idx (uint32 each); the CRC-32C of everything before it
// (uint32); zeros to the next multiple of vecFileAlign; every item's
// vectors in the item order (chunk count × dim float32); zeros to the next
// multiple of vecFileAlign; every item's sign codes (chunk count × code
// words uint64). The vectors' bytes are checked against the items' CRCs in
// the background after a load (verifyMapped), not before the first query.
const vecFileMagic = "capsuled-vecs-1\n"

// vecFileAlign aligns the vector and code regions (and more than float32
// or uint64 need).
const vecFileAlign = 64

// vecFiles: vectors files are kept only where float32s in memory are
// their little-endian file bytes.
var vecFiles = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// VectorsPath is the vectors file of a capsule in a Config.GraphDir.
func VectorsPath(dir, capsule string) string {
	h := sha256.Sum256([]byte(capsule))
	return filepath.Join(dir, hex.EncodeToString(h[:16])+".vecs")
}

// vecItem is one item of a vectors file: its rows, vectors and codes are
// views of the mapping.
type vecItem struct {
	count int
	crc   uint32
	idxs  []int
	vecs  []float32
	codes []uint64
}

// vecFile is a parsed vectors file.
type vecFile struct {
	dim, codeWords, codedAt int
	mean                    []float32
	items                   map[string]vecItem
	order                   []string // the items in file order
	data                    []byte   // the whole file
}

// alignUp rounds n up to a multiple of vecFileAlign.
func alignUp(n int) int { return (n + vecFileAlign - 1) / vecFileAlign * vecFileAlign }

// parseVecFile reads a vectors file's table from b, the whole file (b
// must stay mapped while the result is used: its vectors and codes are
// views of b). Any inconsistency is an error; the vectors' bytes are not
// checked here.
func parseVecFile(b []byte, dim int) (*vecFile, error) {
	bad := func(what string) error { return fmt.Errorf("vectors file: %s", what) }
	if len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		return nil, bad("not aligned") // a mapping always is
	}
	r := &breader{b: b}
	if string(r.bytes(len(vecFileMagic))) != vecFileMagic {
		return nil, bad("not a vectors file")
	}
	fdim, words, nItems, codedAt := int(r.u32()), int(r.u32()), int(r.u32()), int(r.u32())
	nChunks := r.u64()
	if r.err != nil {
		return nil, bad("short header")
	}
	if fdim != dim || (words != 0 && words != (dim+63)/64) {
		return nil, bad("dimensions differ")
	}
	// Every chunk takes at least 4·dim bytes: bound the counts by the size.
	if nChunks > uint64(len(b))/uint64(4*max(dim, 1)) || nItems > len(b)/12 {
		return nil, bad("counts exceed the file")
	}
	vf := &vecFile{dim: dim, codeWords: words, codedAt: codedAt, items: make(map[string]vecItem, nItems), data: b}
	if words > 0 {
		vf.mean = make([]float32, dim)
		for j := range vf.mean {
			vf.mean[j] = math.Float32frombits(r.u32())
		}
	}
	type pos struct {
		id  string
		at  int // first chunk
		cnt int
	}
	order := make([]pos, 0, nItems)
	total := 0
	for range nItems {
		n := int(r.u32())
		if n > 1<<16 || r.err != nil {
			return nil, bad("bad item id")
		}
		id := string(r.bytes(n))
		count, crc := int(r.u32()), r.u32()
		if r.err != nil || count < 0 || uint64(total+count) > nChunks {
			return nil, bad("bad item")
		}
		if _, dup := vf.items[id]; dup {
			return nil, bad("item listed twice")
		}
		idxs := make([]int, count)
		for i := range idxs {
			idxs[i] = int(r.u32())
		}
		if r.err != nil {
			return nil, bad("short item table")
		}
		vf.items[id] = vecItem{count: count, crc: crc, idxs: idxs}
		vf.order = append(vf.order, id)
		order = append(order, pos{id, total, count})
		total += count
	}
	tableEnd := r.off
	sum := r.u32()
	if r.err != nil || crc32.Checksum(b[:tableEnd], castagnoli) != sum {
		return nil, bad("table checksum differs")
	}
	if uint64(total) != nChunks {
		return nil, bad("chunk count differs")
	}
	vecAt := alignUp(r.off)
	vecLen := total * dim * 4
	codeAt := alignUp(vecAt + vecLen)
	codeLen := total * words * 8
	if len(b) != codeAt+codeLen {
		return nil, bad("size differs")
	}
	var vecs []float32
	var codes []uint64
	if total > 0 {
		vecs = unsafe.Slice((*float32)(unsafe.Pointer(&b[vecAt])), total*dim)
		if words > 0 {
			codes = unsafe.Slice((*uint64)(unsafe.Pointer(&b[codeAt])), total*words)
		}
	}
	for _, p := range order {
		it := vf.items[p.id]
		if p.cnt > 0 {
			it.vecs = vecs[p.at*dim : (p.at+p.cnt)*dim : (p.at+p.cnt)*dim]
			if words > 0 {
				it.codes = codes[p.at*words : (p.at+p.cnt)*words : (p.at+p.cnt)*words]
			}
		}
		vf.items[p.id] = it
	}
	return vf, nil
}

// breader reads little-endian values from b, recording a short read.
type breader struct {
	b   []byte
	off int
	err error
}

func (r *breader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.err = io.ErrUnexpectedEOF
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *breader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *breader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// vecSnap is one entry as a vectors file is written from it.
type vecSnap struct {
	id    string
	idxs  []int
	vecs  []float32
	codes []uint64
	sum   uint32
}

// writeVecFile writes entries to path (through a temporary file renamed
// over it). codes are written when words > 0 and every entry has them.
func writeVecFile(path string, dim, words, codedAt int, mean []float32, ens []vecSnap) error {
	for _, s := range ens {
		if len(s.codes) != len(s.idxs)*words {
			words = 0 // an entry without codes: keep none
		}
	}
	if err := atomicfile.Write(path, ".vecs-*", func(w io.Writer) error {
		return encodeVecFile(w, dim, words, codedAt, mean, ens)
	}); err != nil {
		return fmt.Errorf("vectors file: %w", err)
	}
	return nil
}

func encodeVecFile(bw io.Writer, dim, words, codedAt int, mean []float32, ens []vecSnap) error {
	sum := crc32.New(castagnoli)
	w := &gwriter{w: io.MultiWriter(bw, sum)}
	w.bytes([]byte(vecFileMagic))
	total := 0
	for _, s := range ens {
		total += len(s.idxs)
	}
	w.u32(uint32(dim))
	w.u32(uint32(words))
	w.u32(uint32(len(ens)))
	w.u32(uint32(codedAt))
	var b8 [8]byte
	binary.LittleEndian.PutUint64(b8[:], uint64(total))
	w.bytes(b8[:])
	if words > 0 {
		for _, x := range mean {
			w.u32(math.Float32bits(x))
		}
	}
	off := len(vecFileMagic) + 24 + 4*len(mean)*min(words, 1)
	for _, s := range ens {
		w.u32(uint32(len(s.id)))
		w.bytes([]byte(s.id))
		w.u32(uint32(len(s.idxs)))
		w.u32(s.sum)
		for _, x := range s.idxs {
			w.u32(uint32(x))
		}
		off += 12 + len(s.id) + 4*len(s.idxs)
	}
	if w.err != nil {
		return w.err
	}
	binary.LittleEndian.PutUint32(b8[:4], sum.Sum32())
	raw := &gwriter{w: bw}
	raw.bytes(b8[:4])
	off += 4
	raw.bytes(make([]byte, alignUp(off)-off))
	off = alignUp(off)
	for _, s := range ens {
		if len(s.vecs) > 0 {
			raw.bytes(unsafe.Slice((*byte)(unsafe.Pointer(&s.vecs[0])), 4*len(s.vecs)))
		}
	}
	off += 4 * total * dim
	raw.bytes(make([]byte, alignUp(off)-off))
	if words > 0 {
		for _, s := range ens {
			if len(s.codes) > 0 {
				raw.bytes(unsafe.Slice((*byte)(unsafe.Pointer(&s.codes[0])), 8*len(s.codes)))
			}
		}
	}
	return raw.err
}

// checkMapped reports whether an item's mapped vectors still have the
// CRC the file lists (and, with codes, whether these are the vectors' sign
// codes about mean).
func checkMapped(it vecItem, dim int, mean []float32, words int) bool {
	if vecmath.Checksum(it.vecs) != it.crc {
		return false
	}
	if words == 0 || len(it.codes) == 0 {
		return true
	}
	var buf [8]uint64
	for i := range it.count {
		c := appendSignCode(buf[:0], it.vecs[i*dim:(i+1)*dim], mean)
		for j, x := range c {
			if it.codes[i*words+j] != x {
				return false
			}
		}
	}
	return true
}

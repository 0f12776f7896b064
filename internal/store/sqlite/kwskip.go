package sqlite

import (
	"sort"
	"unsafe"
)

// Skip tables let a walk of a posting list start at a chosen document
// without decoding the postings before it: score splits a query's rows into
// document ranges scored on separate goroutines, each starting every list
// at its range.

// kwSkipEvery is how many postings a skip table entry spans.
const kwSkipEvery = 128

// kwSkipMin is the shortest posting list given a skip table: a shorter one
// is walked from its start.
const kwSkipMin = 4 * kwSkipEvery

// kwSkip is where a block of a posting list starts: the byte offset of its
// first posting and the document of the posting before it (-1 for the
// first block).
type kwSkip struct {
	base int64
	off  int
}

// kwSkips is a posting list's skip table and the list it was made from.
type kwSkips struct {
	data   *byte // unsafe.SliceData and len of the list the table was made from
	n      int
	blocks []kwSkip
}

// skips returns p's skip table, made on first use and again when the list
// changed (appended to or cut: writes hold kwIndex.mu, readers its read
// lock; two readers making it at once make the same table).
func (p *kwPosting) skips() []kwSkip {
	if t := p.skipTable.Load(); t != nil && t.data == unsafe.SliceData(p.data) && t.n == len(p.data) {
		return t.blocks
	}
	blocks := make([]kwSkip, 0, p.n/kwSkipEvery+1)
	doc, off := int64(-1), 0
	for i := 0; off < len(p.data); i++ {
		if i%kwSkipEvery == 0 {
			blocks = append(blocks, kwSkip{doc, off})
		}
		dd, _, m := kwNext(p.data[off:])
		doc += int64(dd)
		off += m
	}
	p.skipTable.Store(&kwSkips{data: unsafe.SliceData(p.data), n: len(p.data), blocks: blocks})
	return blocks
}

// seek returns where a walk of p reaching document lo can start: the
// offset of a posting at or before the first one of lo or later, and the
// document of the posting before it.
func (p *kwPosting) seek(lo int64) (off int, doc int64) {
	if lo <= 0 || p.n < kwSkipMin {
		return 0, -1
	}
	blocks := p.skips()
	// The last block whose previous posting is before lo (the first
	// block's, -1, always is).
	i := sort.Search(len(blocks), func(h int) bool { return blocks[h].base >= lo }) - 1
	return blocks[i].off, blocks[i].base
}

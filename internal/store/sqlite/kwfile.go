package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"strconv"
	"unsafe"

	"capsuled/internal/atomicfile"
)

// Keyword index files keep a capsule's keyword index (kwIndex) between
// runs, in the folder kwindex/ beside the database: a build that finds a
// file written at the capsule's current chunk_writes count (a trigger
// counts every chunk row the capsule gains or loses) and creation time
// takes the index from it instead of reading FTS5's vocabulary, which is
// the index at that count exactly. A file is written after a build and,
// when the index changed since, when the store closes; any other change
// moves the count, and a file whose count, capsule, checksum or layout does
// not match is ignored (the index is built) and replaced.
//
// Layout: the magic kwFileMagic; the capsule id, its creation time and the
// chunk_writes count (int64 each, little-endian); then uvarints: the
// document count, the first rowid and the gaps to the next ones, each
// document's length, the dead bit set's words (uint64, little-endian), the
// dead count and deaths; the term count and per term its length and
// bytes, document count, last document plus one, peaks' deaths, peak
// count and (count, length) pairs, and its posting bytes' length and
// bytes; the item count and per item its id's length and bytes, document
// count and per document its gap from the previous plus one and its chunk
// idx; last, the CRC-32C of everything before it (uint32, little-endian).
const kwFileMagic = "capsuled-kwix-2\n"

// kwStamp is what a keyword index file was written at: the capsule (id
// and creation time, since ids can be taken again) and its chunk_writes.
type kwStamp struct{ capID, created, writes int64 }

// kwFilePath is the file of capsule capID's index; "" when the database
// keeps none (no folder).
func (x *kwIndexes) kwFilePath(capID int64) string {
	if x.dir == "" {
		return ""
	}
	return filepath.Join(x.dir, strconv.FormatInt(capID, 10)+".kwix")
}

// readStamp reads capsule capID's stamp in q's snapshot.
func readStamp(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, capID int64) (kwStamp, error) {
	st := kwStamp{capID: capID}
	err := q.QueryRowContext(ctx, "SELECT created_at, chunk_writes FROM capsules WHERE id = ?", capID).Scan(&st.created, &st.writes)
	if err != nil {
		return kwStamp{}, fmt.Errorf("keyword index stamp: %w", interpret(err))
	}
	return st, nil
}

var kwCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeKW writes ix (built, under its read lock) as a file at st.
func encodeKW(ix *kwIndex, st kwStamp) []byte {
	b := make([]byte, 0, 64+len(ix.rowids)*6)
	b = append(b, kwFileMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(st.capID))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.created))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.writes))
	b = binary.AppendUvarint(b, uint64(len(ix.rowids)))
	prev := int64(0)
	for i, r := range ix.rowids {
		if i == 0 {
			b = binary.AppendUvarint(b, uint64(r))
		} else {
			b = binary.AppendUvarint(b, uint64(r-prev))
		}
		prev = r
	}
	for _, d := range ix.dl {
		b = binary.AppendUvarint(b, uint64(d))
	}
	for _, w := range ix.dead {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	b = binary.AppendUvarint(b, uint64(ix.ndead))
	b = binary.AppendUvarint(b, ix.deaths)
	b = binary.AppendUvarint(b, uint64(len(ix.terms)))
	for t, p := range ix.terms {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = binary.AppendUvarint(b, uint64(p.n))
		b = binary.AppendUvarint(b, uint64(p.last+1))
		b = binary.AppendUvarint(b, p.peaksAt)
		b = binary.AppendUvarint(b, uint64(len(p.peaks)))
		for _, pk := range p.peaks {
			b = binary.AppendUvarint(b, uint64(pk.tf))
			b = binary.AppendUvarint(b, uint64(pk.dl))
		}
		b = binary.AppendUvarint(b, uint64(len(p.data)))
		b = append(b, p.data...)
	}
	b = binary.AppendUvarint(b, uint64(len(ix.items)))
	for id, docs := range ix.items {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		b = binary.AppendUvarint(b, uint64(len(docs)))
		prev := int64(-1)
		for _, d := range docs {
			b = binary.AppendUvarint(b, uint64(int64(d)-prev))
			b = binary.AppendUvarint(b, uint64(ix.pos[d]))
			prev = int64(d)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, kwCastagnoli))
}

// errKWFile is a keyword index file that cannot be used.
var errKWFile = errors.New("keyword index file unusable")

// kwReader reads uvarints and bytes from a file, recording the first
// failure.
type kwReader struct {
	b   []byte
	bad bool
}

func (r *kwReader) uv() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count that must not exceed max.
func (r *kwReader) count(max int) int {
	v := r.uv()
	if v > uint64(max) {
		r.bad = true
		return 0
	}
	return int(v)
}

func (r *kwReader) bytes(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// decodeKW reads a keyword index file: the index (built, ready) and its
// stamp. Everything is checked (checksum, counts, that every posting list
// decodes to increasing documents of the index), so a damaged or foreign
// file is an error, never a panic or a wrong index. The index's posting
// lists are views of b without spare capacity (appends copy them out).
func decodeKW(b []byte) (*kwIndex, kwStamp, error) {
	bad := func(what string) (*kwIndex, kwStamp, error) {
		return nil, kwStamp{}, fmt.Errorf("%w: %s", errKWFile, what)
	}
	if len(b) < len(kwFileMagic)+28 || !bytes.Equal(b[:len(kwFileMagic)], []byte(kwFileMagic)) {
		return bad("not a keyword index file")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, kwCastagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum differs")
	}
	h := body[len(kwFileMagic):]
	st := kwStamp{int64(binary.LittleEndian.Uint64(h)), int64(binary.LittleEndian.Uint64(h[8:])), int64(binary.LittleEndian.Uint64(h[16:]))}
	r := &kwReader{b: h[24:]}
	n := r.count(len(r.b))
	ix := &kwIndex{capID: st.capID, ready: true, done: make(chan struct{}), terms: map[string]*kwPosting{}, items: map[string][]uint32{}}
	close(ix.done)
	ix.rowids = make([]int64, n)
	prev := int64(0)
	for i := range n {
		v := r.uv()
		if v > 1<<62 || (i > 0 && v == 0) {
			return bad("rowids out of order")
		}
		prev += int64(v)
		ix.rowids[i] = prev
	}
	ix.dl = make([]uint32, n)
	for i := range n {
		ix.dl[i] = uint32(r.count(1<<32 - 1))
	}
	ix.dead = make([]uint64, (n+63)/64)
	for i := range ix.dead {
		w := r.bytes(8)
		if w == nil {
			return bad("short dead set")
		}
		ix.dead[i] = binary.LittleEndian.Uint64(w)
	}
	ix.ndead = r.count(n)
	ix.deaths = r.uv()
	nTerms := r.count(len(r.b))
	for range nTerms {
		t := string(r.bytes(r.count(len(r.b))))
		p := &kwPosting{n: r.count(n)}
		p.last = int64(r.count(n)) - 1
		p.peaksAt = r.uv()
		np := r.count(len(r.b))
		for range np {
			p.peaks = append(p.peaks, kwPeak{uint32(r.count(1<<32 - 1)), uint32(r.count(1<<32 - 1))})
		}
		p.data = r.bytes(r.count(len(r.b)))
		if r.bad {
			return bad("short term")
		}
		if _, dup := ix.terms[t]; dup {
			return bad("term listed twice")
		}
		// The list must decode to p.n increasing documents ending at last.
		// A long list's skip table is made on the way (kwskip.go), as
		// kwPosting.skips would make it with a second walk of the list.
		doc, cnt := int64(-1), 0
		var blocks []kwSkip
		if p.n >= kwSkipMin {
			blocks = make([]kwSkip, 0, p.n/kwSkipEvery+1)
		}
		for d := p.data; len(d) > 0; {
			if blocks != nil && cnt%kwSkipEvery == 0 {
				blocks = append(blocks, kwSkip{doc, len(p.data) - len(d)})
			}
			v, k := binary.Uvarint(d)
			if k <= 0 {
				return bad("malformed posting list")
			}
			d = d[k:]
			if v&1 == 1 {
				tf, k := binary.Uvarint(d)
				if k <= 0 || tf < 2 {
					return bad("malformed posting list")
				}
				d = d[k:]
			}
			if v>>1 == 0 || v>>1 > uint64(n) {
				return bad("posting list out of order")
			}
			doc += int64(v >> 1)
			cnt++
			if doc >= int64(n) {
				return bad("posting past the documents")
			}
		}
		if cnt != p.n || doc != p.last {
			return bad("posting list count differs")
		}
		if blocks != nil {
			p.skipTable.Store(&kwSkips{data: unsafe.SliceData(p.data), n: len(p.data), blocks: blocks})
		}
		ix.terms[t] = p
	}
	ix.owner = make([]uint32, n)
	for i := range ix.owner {
		ix.owner[i] = kwNoOwner
	}
	ix.pos = make([]uint32, n)
	nItems := r.count(len(r.b))
	for range nItems {
		id := string(r.bytes(r.count(len(r.b))))
		c := r.count(n)
		docs := make([]uint32, c)
		prev := int64(-1)
		o := uint32(len(ix.names))
		for j := range docs {
			v := r.uv()
			if v == 0 || v > uint64(n) {
				r.bad = true
				break
			}
			prev += int64(v)
			if prev >= int64(n) || ix.owner[prev] != kwNoOwner {
				r.bad = true
				break
			}
			docs[j] = uint32(prev)
			ix.owner[prev] = o
			ix.pos[prev] = uint32(r.count(1<<32 - 1))
		}
		if r.bad {
			return bad("short item")
		}
		if _, dup := ix.items[id]; dup {
			return bad("item listed twice")
		}
		ix.items[id] = docs
		ix.names = append(ix.names, id)
	}
	if r.bad || len(r.b) != 0 {
		return bad("malformed")
	}
	for d, o := range ix.owner {
		if o == kwNoOwner && ix.dead[d/64]&(1<<(d%64)) == 0 {
			return bad("a live document of no item")
		}
	}
	return ix, st, nil
}

// writeKWFile writes data, an encoded index, to path through a temporary
// file renamed over it.
func writeKWFile(path string, data []byte) error {
	if err := atomicfile.Write(path, ".kwix-*", func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return fmt.Errorf("keyword index file: %w", err)
	}
	return nil
}

package sqlite

import (
	"fmt"
	"sort"
	"testing"
)

// putVarint appends v as an SQLite varint (the form FTS5's records use).
func putVarint(b []byte, v uint64) []byte {
	if v > 1<<56-1 {
		var g [9]byte
		g[8] = byte(v)
		v >>= 8
		for i := 7; i >= 0; i-- {
			g[i] = byte(v&0x7f) | 0x80
			v >>= 7
		}
		return append(b, g[:]...)
	}
	var g [8]byte
	n := 0
	for {
		g[n] = byte(v&0x7f) | 0x80
		n++
		v >>= 7
		if v == 0 {
			break
		}
	}
	g[0] &= 0x7f
	for i := n - 1; i >= 0; i-- {
		b = append(b, g[i])
	}
	return b
}

func TestVarints(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 240, 16383, 16384, 1 << 35, 1<<56 - 1, 1 << 56, 1<<64 - 1} {
		b := putVarint(nil, v)
		got, n := getVarint(b)
		if got != v || n != len(b) {
			t.Errorf("%d: read %d in %d bytes of %d", v, got, n, len(b))
		}
		if _, n := getVarint(b[:len(b)-1]); n != 0 {
			t.Errorf("%d cut short: read %d bytes", v, n)
		}
	}
	rows, toks, ok := averages(putVarint(putVarint(putVarint(nil, 270894), 40000000), 270894))
	if !ok || rows != 270894 || toks != 40270894 {
		t.Errorf("averages: %d rows, %d tokens, %v", rows, toks, ok)
	}
	for _, bad := range [][]byte{nil, {0x81}, putVarint(nil, 5)} {
		if _, _, ok := averages(bad); ok {
			t.Errorf("averages(%x): ok", bad)
		}
	}
}

// FuzzAverages reads arbitrary bytes as FTS5's averages record and size
// records: no panic, and what it reads re-encodes to the same bytes.
func FuzzAverages(f *testing.F) {
	f.Add(putVarint(putVarint(putVarint(nil, 12), 300), 12))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		averages(b)
		var vals []uint64
		rest := b
		for len(rest) > 0 {
			v, n := getVarint(rest)
			if n == 0 {
				if _, ok := sumVarints(b); ok {
					t.Fatalf("%x: sumVarints ok on a cut varint", b)
				}
				return
			}
			vals = append(vals, v)
			rest = rest[n:]
		}
		var re []byte
		for _, v := range vals {
			re = putVarint(re, v)
		}
		// SQLite varints are not unique (leading 0x80 groups): compare
		// the values, not the bytes.
		var again []uint64
		for rest := re; len(rest) > 0; {
			v, n := getVarint(rest)
			again = append(again, v)
			rest = rest[n:]
		}
		if len(again) != len(vals) {
			t.Fatalf("%x: %d values, %d after re-encoding", b, len(vals), len(again))
		}
		for i := range vals {
			if again[i] != vals[i] {
				t.Fatalf("%x: value %d: %d, %d after re-encoding", b, i, vals[i], again[i])
			}
		}
	})
}

// FuzzPostings appends arbitrary (document gap, count) pairs to a posting
// list and reads them back.
func FuzzPostings(f *testing.F) {
	f.Add([]byte{1, 1, 2, 3, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &kwPosting{last: -1}
		var docs, tfs []uint32
		doc := uint32(0)
		for i := 0; i+1 < len(b); i += 2 {
			doc += uint32(b[i])
			if len(docs) > 0 && doc == docs[len(docs)-1] {
				doc++
			}
			tf := uint32(b[i+1])<<8 | 1
			p.add(doc, tf, 1)
			docs, tfs = append(docs, doc), append(tfs, tf)
		}
		var ix kwIndex
		i := 0
		ix.each(p, func(d, tf uint32) {
			if i >= len(docs) || d != docs[i] || tf != tfs[i] {
				t.Fatalf("posting %d: (%d, %d)", i, d, tf)
			}
			i++
		})
		if i != len(docs) || p.n != len(docs) {
			t.Fatalf("%d postings read, %d added", i, len(docs))
		}
	})
}

func TestSelectTop(t *testing.T) {
	for n := range 60 {
		for k := 1; k <= n; k++ {
			c := make([]kwCand, n)
			for i := range c {
				c[i] = kwCand{doc: uint32(i), score: float64((i * 7919 * (k + 3)) % 13)}
			}
			want := make([]float64, n)
			for i := range c {
				want[i] = c[i].score
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(want)))
			selectTop(c, k)
			got := make([]float64, k)
			for i := range got {
				got[i] = c[i].score
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(got)))
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("n %d k %d: top %v, want %v", n, k, got, want[:k])
				}
			}
		}
	}
}

// FuzzKeywordIndexFile: decodeKW never panics, and an index it accepts is
// one the search can walk: every posting list decodes to increasing
// documents of the index, every item's documents are the index's.
func FuzzKeywordIndexFile(f *testing.F) {
	ix := &kwIndex{terms: map[string]*kwPosting{}, items: map[string][]uint32{}}
	for d, words := range [][]string{{"a", "b", "a"}, {"b"}, {"c", "a"}, {"a", "a", "a", "d"}} {
		ix.rowids = append(ix.rowids, int64(10+3*d))
		ix.pos = append(ix.pos, uint32(d%2))
		ix.dl = append(ix.dl, uint32(len(words)))
		tf := map[string]uint32{}
		for _, w := range words {
			tf[w]++
		}
		for _, w := range []string{"a", "b", "c", "d"} {
			if tf[w] > 0 {
				p := ix.terms[w]
				if p == nil {
					p = &kwPosting{last: -1}
					ix.terms[w] = p
				}
				p.add(uint32(d), tf[w], uint32(len(words)))
			}
		}
		id := fmt.Sprintf("itm_%d", d/2)
		ix.items[id] = append(ix.items[id], uint32(d))
	}
	ix.dead = []uint64{2}
	ix.ndead, ix.deaths = 1, 1
	good := encodeKW(ix, kwStamp{3, 1700000000000, 42})
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(kwFileMagic))
	back, st, err := decodeKW(good)
	if err != nil || st != (kwStamp{3, 1700000000000, 42}) || len(back.terms) != 4 || len(back.rowids) != 4 {
		f.Fatalf("round trip: %v, stamp %v", err, st)
	}
	for d := range back.rowids {
		if h, ok := back.rowsOf().hit(kwCand{doc: uint32(d)}); !ok || h.itemID != fmt.Sprintf("itm_%d", d/2) || h.idx != d%2 || h.rowid != int64(10+3*d) {
			f.Fatalf("round trip: document %d named %+v, %v", d, h, ok)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, _, err := decodeKW(b)
		if err != nil {
			return
		}
		n := len(ix.rowids)
		if len(ix.dl) != n || len(ix.dead) != (n+63)/64 || len(ix.owner) != n || len(ix.pos) != n {
			t.Fatalf("%d rows, %d lengths, %d dead words, %d owners, %d idxs", n, len(ix.dl), len(ix.dead), len(ix.owner), len(ix.pos))
		}
		for term, p := range ix.terms {
			cnt := 0
			prev := -1
			ix.each(p, func(doc, _ uint32) {
				if int(doc) <= prev || int(doc) >= n {
					t.Fatalf("term %q: document %d after %d of %d", term, doc, prev, n)
				}
				prev = int(doc)
				cnt++
			})
			if cnt != p.n {
				t.Fatalf("term %q: %d postings, %d listed", term, cnt, p.n)
			}
		}
		for id, docs := range ix.items {
			for _, d := range docs {
				if int(d) >= n {
					t.Fatalf("item %q: document %d of %d", id, d, n)
				}
				if h, ok := ix.rowsOf().hit(kwCand{doc: d}); !ok || h.itemID != id {
					t.Fatalf("item %q: document %d named %+v", id, d, h)
				}
			}
		}
		for d := range n {
			if ix.dead[d/64]&(1<<(d%64)) == 0 {
				if _, ok := ix.rowsOf().hit(kwCand{doc: uint32(d)}); !ok {
					t.Fatalf("live document %d of no item", d)
				}
			}
		}
	})
}

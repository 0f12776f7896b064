package sqlite

import (
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

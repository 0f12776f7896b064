package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultKeywordIndexMin is the span of chunk rowids from which a capsule's
// keyword search runs on an in-process index (kwIndex) instead of FTS5's
// own scoring: FTS5 reads each scored row's length from its docsize table,
// about a microsecond a row, so a query whose terms match a few hundred
// thousand rows costs hundreds of CPU-ms; the index scores them from memory.
// Smaller capsules keep the plain FTS5 path (and no memory).
const DefaultKeywordIndexMin = 50000

// The in-process keyword index
//
// A kwIndex holds one capsule's posting lists: for each FTS5 token of the
// body column, the capsule's rows that hold it, as varint deltas of local
// document numbers each followed by the token's count in the row, and for
// each row its rowid and its length in tokens (all columns, as FTS5's
// docsize records it). The tokens are FTS5's own: the index is read from
// the full-text index itself (its fts5vocab instance table) when built, and
// a written chunk is tokenized by an in-memory FTS5 table of the same
// tokenizer (tokenizer), so that the index and FTS5 never disagree on what
// a word is.
//
// Scores are FTS5's bm25() to the last bit (bm25Term): the row count, the
// token total and each token's document count are read from the database
// for every query (they span every capsule's rows, as FTS5's do), the
// token counts and lengths from the index, and each row's score is summed
// over the query's phrases in their order, as FTS5 sums them. A query term
// that FTS5 would read as anything but one token (none, or a phrase of
// several) sends the query down the FTS5 path.
//
// The index follows every change of the capsule's chunks committed by this
// process: the writes take kwIndexes.mu across their commit and apply their
// change to the index under it (a build in progress queues them), and note
// FTS5's totals (rows, tokens) after it. Every query compares the totals
// with that note: a change the index did not see (another process's) makes
// them differ, and every index is dropped, the query answered by FTS5 and
// the index built anew. A store shared by several processes
// (CapsuleStore.WithLease) never uses one. Deleted rows stay in the posting
// lists, marked dead, until they are half the index; it is then dropped and
// built anew.
type kwIndexes struct {
	min  int     // the rowid span from which a capsule gets an index
	pool *sql.DB // builds and token document counts (temp fts5vocab tables)
	tok  *tokenizer

	read *sql.DB // the store's readers
	dir  string  // keyword index files (kwfile.go); "" for none

	mu     sync.Mutex // guards m and expect; held across each commit that changes chunks (then an index's mu)
	m      map[int64]*kwIndex
	writes atomic.Uint64 // commits that changed chunks, any capsule's: dfs' cache key
	expect kwTotals      // FTS5's totals after this process's last change

	dfMu sync.Mutex
	dfs  map[string]int64 // each token's document count in the body column, all rows
	dfAt uint64           // writes when dfs was filled

	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// kwIndex is one capsule's keyword index (see kwIndexes).
type kwIndex struct {
	capID int64
	done  chan struct{} // closed when the build ended (err says how)
	err   error

	snapped bool // the build has taken its snapshot (guarded by kwIndexes.mu)

	mu      sync.RWMutex
	ready   bool
	pending []kwChange // changes committed while the index was built
	terms   map[string]*kwPosting
	rowids  []int64  // by local document number, in order
	dl      []uint32 // each row's length in tokens, all columns
	// Each document's item (owner, a number into names; kwNoOwner for
	// none) and chunk idx (pos): a query's hits are named from memory,
	// not read back from chunks. rowids, owner and pos are only appended
	// to, or copied (truncate), so a query may read the slices it took
	// under mu after letting go of it (rowsOf).
	owner  []uint32
	pos    []uint32
	names  []string // item ids by owner number: one per build item or change
	dead   []uint64 // bit set of deleted documents
	ndead  int
	deaths uint64    // rows ever marked dead (kwPosting.peaksAt)
	accs   sync.Pool // *[]float64: score's accumulators, all 0
	orders sync.Pool // *[]uint32: a score part's rows in the order met
	cands  sync.Pool // *[]kwCand: score's results, back from kwSearch

	// items maps each item id to its live documents: a selective filter's
	// items become the documents to score (kwAllowed) without a query.
	items map[string][]uint32

	// The capsule's stamp (kwfile.go) this index is the rows of: its
	// writes move with each change applied. saved is the writes count of
	// the file on disk (-1: none matches); tried is closed once the build
	// has tried the file.
	stamp    kwStamp
	saved    int64
	tried    chan struct{}
	fromFile bool // read from its file, not built
}

// kwPosting is one token's posting list.
type kwPosting struct {
	data []byte // per document: varint delta<<1 | (count > 1), then the count when above 1; the first delta is from -1
	last int64  // the last document in data; -1 when empty
	n    int    // documents in data, dead ones included

	// For each count in the list, the shortest row holding the token that
	// many times: a row's score for the token alone rises with the count
	// and falls with the length, so the best is one of these (kwBounds),
	// while no row of the list has died since (peaksAt == kwIndex.deaths).
	peaks   []kwPeak
	peaksAt uint64

	// skipTable is the list's skip table (kwskip.go): read with the index
	// file, else made on first use.
	skipTable atomic.Pointer[kwSkips]
}

// kwPeak is a count and the shortest row with it.
type kwPeak struct{ tf, dl uint32 }

// note records a row of length dl holding the token tf times in peaks.
func (p *kwPosting) note(tf, dl uint32) {
	for i := range p.peaks {
		if p.peaks[i].tf == tf {
			p.peaks[i].dl = min(p.peaks[i].dl, dl)
			return
		}
	}
	p.peaks = append(p.peaks, kwPeak{tf, dl})
}

// add appends document doc, of length dl, holding the token tf times.
func (p *kwPosting) add(doc, tf, dl uint32) {
	p.note(tf, dl)
	delta := uint64(int64(doc) - p.last)
	if tf == 1 {
		p.data = binary.AppendUvarint(p.data, delta<<1)
	} else {
		p.data = binary.AppendUvarint(p.data, delta<<1|1)
		p.data = binary.AppendUvarint(p.data, uint64(tf))
	}
	p.last = int64(doc)
	p.n++
}

// kwNoOwner is the owner of a document no item lists (a dead one read
// from a file).
const kwNoOwner = math.MaxUint32

// kwDoc is one row to add: its rowid, chunk idx, length and body tokens
// with counts.
type kwDoc struct {
	rowid  int64
	idx    uint32
	dl     uint32
	tokens map[string]uint32
}

// kwChange is one committed change of a capsule's chunks: item's rows
// removed, and rows added (all of item).
type kwChange struct {
	capID   int64
	item    string
	removed []int64 // rowids
	added   []kwDoc
}

func newKWIndexes(path string, read *sql.DB, min int) (*kwIndexes, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	pool, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("keyword index: %w", err)
	}
	pool.SetMaxOpenConns(4)
	tok, err := newTokenizer()
	if err != nil {
		pool.Close()
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	dir := ""
	if path != "" && path != ":memory:" && !strings.HasPrefix(path, "file::memory:") {
		dir = filepath.Join(filepath.Dir(path), "kwindex")
	}
	return &kwIndexes{min: min, pool: pool, tok: tok, read: read, dir: dir, m: map[int64]*kwIndex{}, life: life, stop: stop}, nil
}

// close stops the builds, writes the files of the indexes changed since
// theirs was written, and closes the connections.
func (x *kwIndexes) close() error {
	x.stop()
	x.wg.Wait()
	x.mu.Lock()
	ixs := make([]*kwIndex, 0, len(x.m))
	for _, ix := range x.m {
		ixs = append(ixs, ix)
	}
	x.mu.Unlock()
	for _, ix := range ixs {
		x.save(ix) // a failure costs the next run a build
	}
	return errors.Join(x.pool.Close(), x.tok.close())
}

// save writes ix's file when it is built and differs from the file's.
func (x *kwIndexes) save(ix *kwIndex) error {
	ix.mu.RLock()
	path := x.kwFilePath(ix.capID)
	if !ix.ready || path == "" || ix.saved == ix.stamp.writes {
		ix.mu.RUnlock()
		return nil
	}
	st := ix.stamp
	data := encodeKW(ix, st)
	ix.mu.RUnlock()
	if err := writeKWFile(path, data); err != nil {
		return err
	}
	ix.mu.Lock()
	ix.saved = st.writes
	ix.mu.Unlock()
	return nil
}

// SetKeywordIndexMin sets the rowid span from which a capsule's keyword
// search runs on the in-process index (DefaultKeywordIndexMin; tests lower
// it). Indexes already built stay.
func (db *DB) SetKeywordIndexMin(n int) {
	db.kw.mu.Lock()
	db.kw.min = n
	db.kw.mu.Unlock()
}

// tracked reports whether capsule capID has an index, built or building
// (a write then records its change). Callers hold no lock.
func (x *kwIndexes) tracked(capID int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.m[capID] != nil
}

// commit commits tx, which changed capsule capID's chunks as ch says (ch
// nil: the change was not recorded, because the capsule had no index when
// the write began), and applies the change to the capsule's index.
func (x *kwIndexes) commit(tx *sql.Tx, capID int64, ch *kwChange) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := tx.Commit(); err != nil {
		return err
	}
	x.writes.Add(1)
	x.noteTotals()
	ix := x.m[capID]
	if ix == nil {
		return nil
	}
	if !ix.snapped {
		return nil // the build's snapshot, taken later under x.mu, holds it
	}
	if ch == nil {
		// An index whose build took its snapshot during this write: the
		// change was not recorded.
		delete(x.m, capID)
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.ready {
		ix.pending = append(ix.pending, *ch)
		return nil
	}
	if !ix.apply(*ch) || (ix.ndead > 1024 && 2*ix.ndead > len(ix.rowids)) {
		delete(x.m, capID) // half dead: the next query builds it anew
	}
	return nil
}

// commitDrop commits tx, which deleted capsule capID, and forgets its index.
func (x *kwIndexes) commitDrop(tx *sql.Tx, capID int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := tx.Commit(); err != nil {
		return err
	}
	x.writes.Add(1)
	delete(x.m, capID)
	x.noteTotals()
	if path := x.kwFilePath(capID); path != "" {
		os.Remove(path) // none, most often
	}
	return nil
}

// kwTotals are FTS5's totals: the table's rows and tokens (all columns).
type kwTotals struct{ rows, toks int64 }

// readTotals reads FTS5's averages record (chunks_fts_data row 1).
func readTotals(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (kwTotals, error) {
	var blob []byte
	if err := q.QueryRowContext(ctx, "SELECT block FROM chunks_fts_data WHERE id = 1").Scan(&blob); err != nil {
		return kwTotals{}, fmt.Errorf("keyword totals: %w", interpret(err))
	}
	rows, toks, ok := averages(blob)
	if !ok {
		return kwTotals{}, errors.New("keyword totals: malformed averages record")
	}
	return kwTotals{rows, toks}, nil
}

// noteTotals records FTS5's totals after this process's commit, when any
// index needs them (check). Callers hold x.mu.
func (x *kwIndexes) noteTotals() {
	if len(x.m) == 0 {
		return
	}
	t, err := readTotals(context.Background(), x.read)
	if err != nil {
		clear(x.m) // unknown: no index can be trusted
		return
	}
	x.expect = t
}

// check reads FTS5's totals for a query on an index: false, and every
// index dropped (the next queries build them anew), when they are not
// those this process's own changes left — another process, or a write
// this file does not know, changed the table.
func (x *kwIndexes) check(ctx context.Context) (kwTotals, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	t, err := readTotals(ctx, x.read)
	if err != nil {
		return kwTotals{}, false, err
	}
	if t != x.expect || t.rows <= 0 {
		clear(x.m)
		return t, false, nil
	}
	return t, true, nil
}

// apply applies one change; false when the index cannot take it (it is
// then dropped). Callers hold ix.mu.
func (ix *kwIndex) apply(ch kwChange) bool {
	for _, r := range ch.removed {
		if d, ok := ix.find(r); ok {
			ix.dead[d/64] |= 1 << (d % 64)
			ix.ndead++
			ix.deaths++
		}
	}
	delete(ix.items, ch.item)
	ix.stamp.writes += int64(len(ch.removed) + len(ch.added))
	owner := uint32(len(ix.names))
	if len(ch.added) > 0 {
		ix.names = append(ix.names, ch.item)
	}
	for _, doc := range ch.added {
		if n := len(ix.rowids); n > 0 && doc.rowid <= ix.rowids[n-1] {
			// SQLite gives a new row the table's largest rowid plus one:
			// below ours only when our last rows were deleted, and then
			// every row of ours from that rowid on is dead. They go, and
			// the rowids stay in order.
			if !ix.truncate(uint32(sort.Search(n, func(i int) bool { return ix.rowids[i] >= doc.rowid }))) {
				return false
			}
		}
		d := uint32(len(ix.rowids))
		ix.items[ch.item] = append(ix.items[ch.item], d)
		ix.rowids = append(ix.rowids, doc.rowid)
		ix.owner = append(ix.owner, owner)
		ix.pos = append(ix.pos, doc.idx)
		ix.dl = append(ix.dl, doc.dl)
		if int(d/64) >= len(ix.dead) {
			ix.dead = append(ix.dead, 0)
		}
		for t, tf := range doc.tokens {
			p := ix.terms[t]
			if p == nil {
				p = &kwPosting{last: -1, peaksAt: ix.deaths}
				ix.terms[t] = p
			}
			p.add(d, tf, doc.dl)
		}
	}
	return true
}

// find returns the live document of rowid r (rowids are in order).
func (ix *kwIndex) find(r int64) (uint32, bool) {
	i := sort.Search(len(ix.rowids), func(i int) bool { return ix.rowids[i] >= r })
	if i == len(ix.rowids) || ix.rowids[i] != r || ix.dead[i/64]&(1<<(i%64)) != 0 {
		return 0, false
	}
	return uint32(i), true
}

// truncate drops documents k and later, which must all be dead (false,
// and nothing changed, when one is not): their postings end every list
// that has any.
func (ix *kwIndex) truncate(k uint32) bool {
	n := uint32(len(ix.rowids))
	for d := k; d < n; d++ {
		if ix.dead[d/64]&(1<<(d%64)) == 0 {
			return false
		}
	}
	for t, p := range ix.terms {
		if p.last < int64(k) {
			continue
		}
		off, doc, cnt := 0, int64(-1), 0
		for off < len(p.data) {
			dd, _, m := kwNext(p.data[off:])
			if doc+int64(dd) >= int64(k) {
				break
			}
			doc += int64(dd)
			off += m
			cnt++
		}
		if cnt == 0 {
			delete(ix.terms, t)
			continue
		}
		p.data, p.last, p.n = p.data[:off], doc, cnt
	}
	ix.ndead -= int(n - k)
	// Copies, not cuts: a query may still read the old slices (rowsOf),
	// and the next appends would write over their last documents.
	ix.rowids, ix.owner, ix.pos = slices.Clone(ix.rowids[:k]), slices.Clone(ix.owner[:k]), slices.Clone(ix.pos[:k])
	ix.dl = ix.dl[:k]
	for d := k; d < n && d/64 < uint32(len(ix.dead)); d++ {
		ix.dead[d/64] &^= 1 << (d % 64)
	}
	ix.dead = ix.dead[:(k+63)/64]
	return true
}

// index returns capsule capID's index when it is built, or nil: when the
// capsule's chunk rowids span at least the threshold, the first call starts
// the build in the background (FTS5 answers meanwhile).
func (x *kwIndexes) index(capID, span int64) *kwIndex {
	x.mu.Lock()
	ix := x.m[capID]
	if ix == nil {
		if span < int64(x.min) || x.life.Err() != nil {
			x.mu.Unlock()
			return nil
		}
		ix = &kwIndex{capID: capID, done: make(chan struct{}), tried: make(chan struct{}), saved: -1}
		x.m[capID] = ix
		x.wg.Add(1)
		go func() {
			defer x.wg.Done()
			fromFile, err := x.build(x.life, ix)
			if err == nil && !fromFile {
				x.save(ix)
			}
			if err != nil {
				x.mu.Lock()
				if x.m[capID] == ix {
					delete(x.m, capID) // the next query tries again
				}
				x.mu.Unlock()
			}
			ix.err = err
			close(ix.done)
		}()
	}
	x.mu.Unlock()
	// A file is read in well under a second where FTS5 would score a
	// large capsule's query in about as long: wait for that attempt.
	select {
	case <-ix.tried:
	case <-x.life.Done():
	}
	ix.mu.RLock()
	ready := ix.ready
	ix.mu.RUnlock()
	if !ready {
		return nil
	}
	return ix
}

// KeywordReady waits until the capsule's keyword index is built, when the
// capsule is large enough to have one (and starts its build if no query
// has); it returns at once for a capsule that keeps the FTS5 path.
func (s *CapsuleStore) KeywordReady(ctx context.Context, capsule string) error {
	if s.lease > 0 {
		return nil
	}
	sc, err := s.keywordScope(ctx, capsule)
	if err != nil || sc.lo == 0 {
		return err
	}
	if s.db.kw.index(sc.capID, sc.hi-sc.lo+1) != nil {
		return nil
	}
	s.db.kw.mu.Lock()
	ix := s.db.kw.m[sc.capID]
	s.db.kw.mu.Unlock()
	if ix == nil {
		return nil
	}
	select {
	case <-ix.done:
		return ix.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tempVocab creates, on conn, the fts5vocab tables of chunks_fts this file
// reads (temporary: per connection, nothing written to the database).
func tempVocab(ctx context.Context, conn *sql.Conn) error {
	for _, q := range []string{
		"CREATE VIRTUAL TABLE IF NOT EXISTS temp.kw_inst USING fts5vocab(main, chunks_fts, instance)",
		"CREATE VIRTUAL TABLE IF NOT EXISTS temp.kw_col USING fts5vocab(main, chunks_fts, col)",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("keyword index: %w", err)
		}
	}
	return nil
}

// build reads the capsule's rows from one snapshot of the database: their
// rowids, lengths (chunks_fts_docsize) and body tokens (the instance
// vocabulary, which lists every token occurrence by token, then row). The
// snapshot is taken under kwIndexes.mu, so every commit is either in it or
// queued in ix.pending, applied at the end.
func (x *kwIndexes) build(ctx context.Context, ix *kwIndex) (fromFile bool, err error) {
	triedOnce := sync.OnceFunc(func() { close(ix.tried) })
	defer triedOnce()
	var saved *kwIndex
	var savedAt kwStamp
	if path := x.kwFilePath(ix.capID); path != "" {
		if b, err := os.ReadFile(path); err == nil {
			saved, savedAt, _ = decodeKW(b) // unusable: built, and written anew
		}
	}
	conn, err := x.pool.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if err := tempVocab(ctx, conn); err != nil {
		return false, err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return false, err
	}
	defer func() {
		if _, cerr := conn.ExecContext(context.Background(), "COMMIT"); err == nil {
			err = cerr
		}
	}()
	ix.terms = map[string]*kwPosting{}
	ix.items = map[string][]uint32{}
	x.mu.Lock()
	if ix.stamp, err = readStamp(ctx, conn, ix.capID); err != nil {
		x.mu.Unlock()
		return false, err
	}
	if saved != nil && savedAt == ix.stamp {
		// The file is this snapshot's rows: take it.
		x.expect, err = readTotals(ctx, conn)
		ix.snapped = err == nil
		x.mu.Unlock()
		if err != nil {
			return false, err
		}
		ix.mu.Lock()
		ix.terms, ix.rowids, ix.dl, ix.dead, ix.ndead, ix.deaths, ix.items = saved.terms, saved.rowids, saved.dl, saved.dead, saved.ndead, saved.deaths, saved.items
		ix.owner, ix.pos, ix.names = saved.owner, saved.pos, saved.names
		ix.saved, ix.fromFile = savedAt.writes, true
		ix.mu.Unlock()
		return true, x.finish(ix)
	}
	triedOnce()
	err = func() error {
		rows, err := conn.QueryContext(ctx, "SELECT id, item_id, idx FROM chunks WHERE capsule_id = ? ORDER BY id", ix.capID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r, idx int64
			var item string
			if err := rows.Scan(&r, &item, &idx); err != nil {
				return err
			}
			if idx < 0 || idx > math.MaxUint32 {
				return fmt.Errorf("chunk %d: idx %d out of range", r, idx)
			}
			docs := ix.items[item]
			o := uint32(len(ix.names)) // the item's first row: a new owner
			if len(docs) > 0 {
				o = ix.owner[docs[0]]
			} else {
				ix.names = append(ix.names, item)
			}
			ix.items[item] = append(docs, uint32(len(ix.rowids)))
			ix.rowids = append(ix.rowids, r)
			ix.owner = append(ix.owner, o)
			ix.pos = append(ix.pos, uint32(idx))
		}
		return rows.Err()
	}()
	if err == nil {
		// The totals of the snapshot: this process's commits keep them
		// from now on (noteTotals).
		x.expect, err = readTotals(ctx, conn)
	}
	ix.snapped = err == nil
	x.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("keyword index: %w", err)
	}
	ix.dl = make([]uint32, len(ix.rowids))
	ix.dead = make([]uint64, (len(ix.rowids)+63)/64)
	if len(ix.rowids) > 0 {
		// The rows' local numbers by rowid, for the two scans (a map
		// lookup per token occurrence was a fifth of the build).
		lo, hi := ix.rowids[0], ix.rowids[len(ix.rowids)-1]
		at := make([]uint32, hi-lo+1)
		for i := range at {
			at[i] = math.MaxUint32
		}
		for d, r := range ix.rowids {
			at[r-lo] = uint32(d)
		}
		if err := ix.readLengths(ctx, conn, lo, at); err != nil {
			return false, err
		}
		if err := ix.readPostings(ctx, conn, lo, at); err != nil {
			return false, err
		}
	}
	return false, x.finish(ix)
}

// finish applies the changes committed during the build and makes the
// index ready.
func (x *kwIndexes) finish(ix *kwIndex) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, ch := range ix.pending {
		if !ix.apply(ch) {
			return errors.New("keyword index: a change it cannot take came during the build")
		}
	}
	ix.pending, ix.ready = nil, true
	return nil
}

// readLengths fills dl from chunks_fts_docsize: each row's column sizes in
// tokens, SQLite varints.
func (ix *kwIndex) readLengths(ctx context.Context, conn *sql.Conn, lo int64, at []uint32) error {
	rows, err := conn.QueryContext(ctx, "SELECT id, sz FROM chunks_fts_docsize WHERE id BETWEEN ? AND ?", lo, lo+int64(len(at))-1)
	if err != nil {
		return fmt.Errorf("keyword index lengths: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r int64
		var sz []byte
		if err := rows.Scan(&r, &sz); err != nil {
			return fmt.Errorf("keyword index lengths: %w", err)
		}
		d := at[r-lo]
		if d == math.MaxUint32 {
			continue
		}
		total, ok := sumVarints(sz)
		if !ok {
			return fmt.Errorf("keyword index lengths: row %d: malformed size record", r)
		}
		ix.dl[d] = uint32(total)
	}
	return rows.Err()
}

// readPostings reads the body tokens of the index's rows (at[rowid-lo]: the
// local number, MaxUint32 for another capsule's row) from the instance
// vocabulary (token, then row order: each token's rows arrive in rowid
// order, which is local order).
func (ix *kwIndex) readPostings(ctx context.Context, conn *sql.Conn, lo int64, at []uint32) error {
	rows, err := conn.QueryContext(ctx, "SELECT term, doc FROM temp.kw_inst WHERE col = 'body' AND doc BETWEEN ? AND ?", lo, lo+int64(len(at))-1)
	if err != nil {
		return fmt.Errorf("keyword index postings: %w", err)
	}
	defer rows.Close()
	var p *kwPosting
	var term string
	doc, tf := int64(-1), uint32(0)
	flush := func() {
		if p != nil && tf > 0 {
			p.add(uint32(doc), tf, ix.dl[doc])
		}
		tf = 0
	}
	for i := 0; rows.Next(); i++ {
		if i%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var t string
		var r int64
		if err := rows.Scan(&t, &r); err != nil {
			return fmt.Errorf("keyword index postings: %w", err)
		}
		if r < lo || r-lo >= int64(len(at)) || at[r-lo] == math.MaxUint32 {
			continue // another capsule's row
		}
		d := at[r-lo]
		if t != term || p == nil {
			flush()
			term = t
			if p = ix.terms[t]; p == nil {
				p = &kwPosting{last: -1}
				ix.terms[t] = p
			}
			doc = int64(d)
		} else if int64(d) != doc {
			flush()
			doc = int64(d)
		}
		tf++
	}
	flush()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("keyword index postings: %w", err)
	}
	// One allocation for every list, without append's slack (a list
	// that grows later moves out of it).
	total := 0
	for _, p := range ix.terms {
		total += len(p.data)
	}
	arena := make([]byte, 0, total)
	for _, p := range ix.terms {
		start := len(arena)
		arena = append(arena, p.data...)
		p.data = arena[start:len(arena):len(arena)]
	}
	return nil
}

// getVarint reads one SQLite varint (big-endian groups of seven bits, the
// ninth byte whole) from b: its value and length, 0 when b ends first.
func getVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0
		}
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return v, 9
}

// sumVarints is the sum of the varints that make up b (false when b is not
// a whole number of them).
func sumVarints(b []byte) (uint64, bool) {
	var sum uint64
	for len(b) > 0 {
		v, n := getVarint(b)
		if n == 0 {
			return 0, false
		}
		sum += v
		b = b[n:]
	}
	return sum, true
}

// averages reads FTS5's averages record (chunks_fts_data row 1): the table's
// row count, then each column's token total (varints).
func averages(b []byte) (rows int64, tokens int64, ok bool) {
	v, n := getVarint(b)
	if n == 0 {
		return 0, 0, false
	}
	t, ok := sumVarints(b[n:])
	if !ok || n == len(b) {
		return 0, 0, false
	}
	return int64(v), int64(t), true
}

// The BM25 parameters of FTS5's bm25(), which kwIndex reproduces.
var bm25K1, bm25B = 1.2, 0.75

// bm25IDFs sets idf[i] to FTS5's bm25() IDF of a phrase that hits[i] of
// nRow rows match: log((N − n + 0.5) / (n + 0.5)), 1e-6 where that is not
// above 0. The logarithm is SQLite's (ln(), the C library's log that FTS5
// calls; Go's math.Log differs from it in the last bit of some results).
func (s *CapsuleStore) bm25IDFs(ctx context.Context, nRow int64, hits []int64, idf []float64) error {
	var q strings.Builder
	var args, dest []any
	for i, n := range hits {
		// log(x) ≤ 0 exactly when x ≤ 1: FTS5's floor, without asking
		// (and a count above the rows, which only a write between reading
		// the totals and the index gives, stays finite).
		x := (float64(nRow-n) + 0.5) / (float64(n) + 0.5)
		if x <= 1 {
			idf[i] = 1e-6
			continue
		}
		if len(args) > 0 {
			q.WriteString(", ")
		}
		args = append(args, x)
		dest = append(dest, &idf[i])
		fmt.Fprintf(&q, "ln(?%d)", len(args))
	}
	if len(args) == 0 {
		return nil
	}
	if err := s.db.read.QueryRowContext(ctx, "SELECT "+q.String(), args...).Scan(dest...); err != nil {
		return fmt.Errorf("keyword idf: %w", interpret(err))
	}
	return nil
}

// bm25Term is one phrase's part of FTS5's bm25() score of a row of length d
// holding the phrase tf times, operation for operation as FTS5 computes it
// (the conversions keep the compiler from fusing a multiply and an add).
func bm25Term(idf, tf, d, avgdl float64) float64 {
	return float64(idf * bm25Ratio(tf, d, avgdl))
}

// bm25Ratio is bm25Term's factor of idf.
func bm25Ratio(tf, d, avgdl float64) float64 {
	num := float64(tf * (bm25K1 + 1.0))
	norm := float64(1-bm25B) + float64(float64(bm25B*d)/avgdl)
	den := tf + float64(bm25K1*norm)
	return float64(num / den)
}

// bm25Ones is bm25Ratio of a row holding a token once, by the row's length
// below kwOnesLen: a query's scoring takes most postings' factor from it
// instead of two divisions each (the same bits: it is the same
// computation).
func bm25Ones(avgdl float64) *[kwOnesLen]float64 {
	var t [kwOnesLen]float64
	for d := range t {
		t[d] = bm25Ratio(1, float64(d), avgdl)
	}
	return &t
}

// kwOnesLen covers the lengths of chunks of a few hundred words.
const kwOnesLen = 1024

// kwStats are what a query's BM25 reads from the whole table.
type kwStats struct {
	avgdl float64
	idf   []float64 // by phrase
}

// kwStats computes the IDF of each token and the mean row length from
// FTS5's totals (tot, all capsules' rows) and each token's document count
// in the body column, all rows: from the index when every row of the table
// is the capsule's, else from the vocabulary (cached until the next write).
func (s *CapsuleStore) kwStats(ctx context.Context, ix *kwIndex, tot kwTotals, tokens []string) (kwStats, error) {
	nRow, nTok := tot.rows, tot.toks
	st := kwStats{avgdl: float64(nTok) / float64(nRow), idf: make([]float64, len(tokens))}
	hits := make([]int64, len(tokens))
	if live := int64(len(ix.rowids) - ix.ndead); live == nRow {
		for i, t := range tokens {
			hits[i] = ix.liveDocs(t)
		}
	} else {
		var err error
		if hits, err = s.db.kw.docCounts(ctx, tokens); err != nil {
			return kwStats{}, err
		}
	}
	return st, s.bm25IDFs(ctx, nRow, hits, st.idf)
}

// liveDocs is the number of live documents in t's posting list. Callers
// hold ix.mu.
func (ix *kwIndex) liveDocs(t string) int64 {
	p := ix.terms[t]
	if p == nil {
		return 0
	}
	if ix.ndead == 0 {
		return int64(p.n)
	}
	n := int64(0)
	ix.each(p, func(d, _ uint32) {
		if ix.dead[d/64]&(1<<(d%64)) == 0 {
			n++
		}
	})
	return n
}

// kwNext decodes the posting at the start of b (kwPosting.data): the
// document delta, the count, and its length in bytes.
func kwNext(b []byte) (delta, tf uint64, n int) {
	v, n := binary.Uvarint(b)
	if v&1 == 0 {
		return v >> 1, 1, n
	}
	tf, m := binary.Uvarint(b[n:])
	return v >> 1, tf, n + m
}

// each calls fn with every (document, count) of p, dead ones included.
func (ix *kwIndex) each(p *kwPosting, fn func(doc, tf uint32)) {
	b := p.data
	doc := int64(-1)
	for len(b) > 0 {
		dd, tf, n := kwNext(b)
		b = b[n:]
		doc += int64(dd)
		fn(uint32(doc), uint32(tf))
	}
}

// docCounts returns each token's document count in the body column of the
// whole table, from the col vocabulary (which walks the token's doclist),
// cached until the next write.
func (x *kwIndexes) docCounts(ctx context.Context, tokens []string) ([]int64, error) {
	out := make([]int64, len(tokens))
	// Not under x.mu: callers hold an index's lock, which a commit
	// takes under x.mu.
	writes := x.writes.Load()
	var missing []int
	x.dfMu.Lock()
	if x.dfs == nil || x.dfAt != writes || len(x.dfs) > 100000 {
		x.dfs, x.dfAt = map[string]int64{}, writes
	}
	for i, t := range tokens {
		n, ok := x.dfs[t]
		if !ok {
			missing = append(missing, i)
		}
		out[i] = n
	}
	x.dfMu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	conn, err := x.pool.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("keyword counts: %w", err)
	}
	defer conn.Close()
	if err := tempVocab(ctx, conn); err != nil {
		return nil, err
	}
	for _, i := range missing {
		err := conn.QueryRowContext(ctx, "SELECT doc FROM temp.kw_col WHERE term = ? AND col = 'body'", tokens[i]).Scan(&out[i])
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("keyword counts: %w", err)
		}
	}
	x.dfMu.Lock()
	if x.dfAt == writes {
		for _, i := range missing {
			x.dfs[tokens[i]] = out[i]
		}
	}
	x.dfMu.Unlock()
	return out, nil
}

// kwCand is one scored row.
type kwCand struct {
	doc   uint32
	score float64
}

// score scores every live row (of allowed, when not nil) that holds any
// of the phrases' tokens, summing the phrases in order as FTS5 does (a
// phrase a row lacks adds 0). A query of many postings is scored in
// document ranges on up to GOMAXPROCS goroutines (each starting every list
// at its range through the list's skip table, kwskip.go). Callers hold
// ix.mu.
func (ix *kwIndex) score(tokens []string, st kwStats, allowed []uint64) []kwCand {
	return ix.scoreInParts(tokens, st, allowed, runtime.GOMAXPROCS(0), kwPartPostings)
}

// scoreInParts is score on up to maxParts goroutines of at least perPart
// postings each.
func (ix *kwIndex) scoreInParts(tokens []string, st kwStats, allowed []uint64, maxParts, perPart int) []kwCand {
	var acc []float64
	if p, ok := ix.accs.Get().(*[]float64); ok && len(*p) >= len(ix.rowids) {
		acc = *p
	} else {
		acc = make([]float64, len(ix.rowids)+len(ix.rowids)/8)
	}
	lists := make([]*kwPosting, len(tokens))
	postings := 0
	for i, t := range tokens {
		if p := ix.terms[t]; p != nil {
			lists[i] = p
			postings += p.n
		}
	}
	// Rows in parts of equal document ranges, one goroutine each: every
	// row's parts are added in the tokens' order whichever range it is in,
	// so its score is the same to the bit.
	n := int64(len(ix.rowids))
	parts := max(1, min(maxParts, postings/max(perPart, 1), int(n)))
	orders := make([][]uint32, parts)
	ones := bm25Ones(st.avgdl)
	scorePart := func(k int) {
		lo, hi := n*int64(k)/int64(parts), n*int64(k+1)/int64(parts)
		var order []uint32
		if o, ok := ix.orders.Get().(*[]uint32); ok {
			order = (*o)[:0]
		}
		for i, p := range lists {
			if p == nil {
				continue
			}
			idf := st.idf[i]
			off, doc := p.seek(lo)
			b := p.data[off:]
			for len(b) > 0 {
				dd, tf, m := kwNext(b)
				b = b[m:]
				doc += int64(dd)
				if doc < lo {
					continue
				}
				if doc >= hi {
					break
				}
				d := uint32(doc)
				if ix.dead[d/64]&(1<<(d%64)) != 0 || (allowed != nil && allowed[d/64]&(1<<(d%64)) == 0) {
					continue
				}
				if acc[d] == 0 { // every part is above 0: 0 is a row not met yet
					order = append(order, d)
				}
				if dl := ix.dl[d]; tf == 1 && dl < kwOnesLen {
					acc[d] += float64(idf * ones[dl])
				} else {
					acc[d] += bm25Term(idf, float64(tf), float64(dl), st.avgdl)
				}
			}
		}
		orders[k] = order
	}
	if parts == 1 {
		scorePart(0)
	} else {
		var wg sync.WaitGroup
		for k := 1; k < parts; k++ {
			wg.Go(func() { scorePart(k) })
		}
		scorePart(0)
		wg.Wait()
	}
	total := 0
	for _, o := range orders {
		total += len(o)
	}
	var out []kwCand
	if c, ok := ix.cands.Get().(*[]kwCand); ok && cap(*c) >= total {
		out = (*c)[:0]
	} else {
		out = make([]kwCand, 0, total)
	}
	for _, o := range orders {
		for _, d := range o {
			out = append(out, kwCand{d, acc[d]})
			acc[d] = 0
		}
		ix.orders.Put(&o)
	}
	ix.accs.Put(&acc)
	return out
}

// kwPartPostings is the fewest postings a query's scoring gives each
// goroutine: about 5 ms of work on the development machine, so that a
// small query stays on its caller's goroutine.
const kwPartPostings = 100000

// tokens maps query terms to FTS5 tokens; false when a term is not exactly
// one token (the FTS5 path answers such a query).
func (s *CapsuleStore) kwTokens(ctx context.Context, terms []string) ([]string, bool, error) {
	toks, err := s.db.kw.tok.terms(ctx, terms)
	if err != nil {
		return nil, false, err
	}
	out := make([]string, len(terms))
	for i, t := range toks {
		if len(t) != 1 {
			return nil, false, nil
		}
		out[i] = t[0]
	}
	return out, true, nil
}

// kwBounds is KeywordBounds on the index: each term's best score alone.
func (s *CapsuleStore) kwBounds(ctx context.Context, ix *kwIndex, terms []string) ([]float64, bool, error) {
	toks, ok, err := s.kwTokens(ctx, terms)
	if !ok || err != nil {
		return nil, false, err
	}
	tot, ok, err := s.db.kw.check(ctx)
	if !ok || err != nil {
		return nil, false, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st, err := s.kwStats(ctx, ix, tot, toks)
	if err != nil {
		return nil, false, err
	}
	out := make([]float64, len(terms))
	for i, t := range toks {
		p := ix.terms[t]
		if p == nil {
			continue
		}
		best := 0.0
		if p.peaksAt == ix.deaths {
			for _, pk := range p.peaks {
				best = max(best, bm25Term(st.idf[i], float64(pk.tf), float64(pk.dl), st.avgdl))
			}
		} else {
			ix.each(p, func(d, tf uint32) {
				if ix.dead[d/64]&(1<<(d%64)) == 0 {
					best = max(best, bm25Term(st.idf[i], float64(tf), float64(ix.dl[d]), st.avgdl))
				}
			})
		}
		out[i] = best
	}
	return out, true, nil
}

// kwSearch streams the ranking of the phrases (terms, in this order) on
// the index, restricted to items' chunks when items is not nil: the same
// rows, scores and order of ties as the FTS5 path. false when the index
// cannot answer (a term that is not one token).
func (s *CapsuleStore) kwSearch(ctx context.Context, ix *kwIndex, terms []string, items []string, want int, fn func(itemID string, idx int, score float64) bool) (bool, error) {
	toks, ok, err := s.kwTokens(ctx, terms)
	if !ok || err != nil {
		return false, err
	}
	tot, ok, err := s.db.kw.check(ctx)
	if !ok || err != nil {
		return false, err
	}
	var cands []kwCand
	var rows kwRows
	err = func() error {
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		st, err := s.kwStats(ctx, ix, tot, toks)
		if err != nil {
			return err
		}
		var allowed []uint64
		if items != nil {
			allowed = s.kwAllowed(ix, items)
		}
		cands = ix.score(toks, st, allowed)
		rows = ix.rowsOf()
		return nil
	}()
	if err != nil {
		return true, err
	}
	kwEmit(cands, rows, want, fn)
	ix.cands.Put(&cands)
	return true, nil
}

// kwRows is what a query's hits are named from: views of an index's
// document arrays, taken under its read lock (kwIndex.rowsOf). The index
// only appends to these arrays or replaces them, so the views keep the
// values they had when the query scored: a row deleted after that is still
// named, as it would be had the write come just after the query (the
// engine leaves out a chunk removed since when it reads the hits' texts).
type kwRows struct {
	rowids []int64
	owner  []uint32
	pos    []uint32
	names  []string
}

// rowsOf takes the views. Callers hold ix.mu.
func (ix *kwIndex) rowsOf() kwRows {
	return kwRows{ix.rowids, ix.owner, ix.pos, ix.names}
}

// hit names candidate c; false for a document of no item.
func (r kwRows) hit(c kwCand) (keywordHit, bool) {
	o := r.owner[c.doc]
	if o == kwNoOwner {
		return keywordHit{}, false
	}
	return keywordHit{rowid: r.rowids[c.doc], itemID: r.names[o], idx: int(r.pos[c.doc]), score: c.score}, true
}

// kwAllowed is the bit set of the index's live documents that are chunks
// of items. Callers hold ix.mu.
func (s *CapsuleStore) kwAllowed(ix *kwIndex, items []string) []uint64 {
	out := make([]uint64, len(ix.dead))
	for _, id := range items {
		for _, d := range ix.items[id] {
			out[d/64] |= 1 << (d % 64)
		}
	}
	return out
}

// kwEmit streams cands best first, equal scores by item id, then idx: in
// groups (the first of want+1 rows, then fourfold), each cut after a whole
// run of equal scores and sorted as a group. The first group is selected in
// linear time (most consumers stop in it), the later ones popped from a
// heap of the rest.
func kwEmit(cands []kwCand, rows kwRows, want int, fn func(itemID string, idx int, score float64) bool) {
	n := max(want, 1) + 1
	var group []kwCand
	if len(cands) <= n {
		group, cands = cands, nil
	} else {
		selectTop(cands, n)
		kth := cands[0].score
		for _, c := range cands[:n] {
			kth = min(kth, c.score)
		}
		g := n
		for i := n; i < len(cands); i++ { // the rest of the run of kth's score
			if cands[i].score == kth {
				cands[g], cands[i] = cands[i], cands[g]
				g++
			}
		}
		group, cands = cands[:g], cands[g:]
	}
	h := kwHeap(cands) // made a heap when the consumer wants more than the first group
	heaped := false
	hits := make([]keywordHit, 0, len(group))
	for len(group) > 0 {
		hits = hits[:0]
		for _, c := range group {
			if hit, ok := rows.hit(c); ok {
				hits = append(hits, hit)
			}
		}
		sortHits(hits)
		for _, h := range hits {
			if !fn(h.itemID, h.idx, h.score) {
				return
			}
		}
		n *= 4
		group = nil
		if !heaped {
			h.init()
			heaped = true
		}
		for len(h) > 0 && (len(group) < n || h[0].score == group[len(group)-1].score) {
			group = append(group, h.pop())
		}
	}
}

// selectTop moves the k best-scoring candidates to c[:k], in no order
// (quickselect, the pivot the median of three).
func selectTop(c []kwCand, k int) {
	lo, hi := 0, len(c)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		a, b, m := c[lo].score, c[hi].score, c[mid].score
		pivot := max(min(a, b), min(max(a, b), m))
		i, j := lo, hi
		for i <= j {
			for c[i].score > pivot {
				i++
			}
			for c[j].score < pivot {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		// c[lo..j] ≥ pivot ≥ c[i..hi]
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}

// kwHeap is a max-heap of candidates by score.
type kwHeap []kwCand

func (h kwHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h kwHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if r := l + 1; r < len(h) && h[r].score > h[l].score {
			j = r
		}
		if h[j].score <= h[i].score {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (h *kwHeap) pop() kwCand {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

// tokenizer tokenizes texts as chunks_fts does: an in-memory database with
// an FTS5 table of the same tokenizer, whose instance vocabulary lists the
// tokens of the rows inserted in a transaction that is then rolled back.
type tokenizer struct {
	mu sync.Mutex
	db *sql.DB

	cache map[string][]string // query term → its tokens
}

func newTokenizer() (*tokenizer, error) {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	for _, q := range []string{
		"CREATE VIRTUAL TABLE t USING fts5(body, cap, tokenize = 'porter unicode61 remove_diacritics 2')",
		"CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)",
	} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	return &tokenizer{db: db, cache: map[string][]string{}}, nil
}

func (t *tokenizer) close() error { return t.db.Close() }

// docs tokenizes chunk texts of the capsule whose cap token is capTok: each
// text's body tokens with their counts and its length, all columns.
func (t *tokenizer) docs(ctx context.Context, texts []string, capTok string) ([]kwDoc, error) {
	out := make([]kwDoc, len(texts))
	for i := range out {
		out[i].tokens = map[string]uint32{}
	}
	err := t.run(ctx, texts, capTok, func(term string, doc int, col string) {
		out[doc].dl++
		if col == "body" {
			out[doc].tokens[term]++
		}
	})
	return out, err
}

// terms returns each query term's tokens, in order.
func (t *tokenizer) terms(ctx context.Context, terms []string) ([][]string, error) {
	out := make([][]string, len(terms))
	var ask []string
	var at []int
	t.mu.Lock()
	for i, w := range terms {
		if toks, ok := t.cache[w]; ok {
			out[i] = toks
		} else {
			ask, at = append(ask, w), append(at, i)
		}
	}
	t.mu.Unlock()
	if len(ask) == 0 {
		return out, nil
	}
	type inst struct {
		term   string
		offset int
	}
	got := make([][]inst, len(ask))
	var err error
	t.mu.Lock()
	defer t.mu.Unlock()
	err = t.runLocked(ctx, ask, "", func(term string, doc int, col string, offset int) {
		if col == "body" {
			got[doc] = append(got[doc], inst{term, offset})
		}
	})
	if err != nil {
		return nil, err
	}
	if len(t.cache) > 100000 {
		t.cache = map[string][]string{}
	}
	for j, g := range got {
		sort.Slice(g, func(a, b int) bool { return g[a].offset < g[b].offset })
		toks := make([]string, len(g))
		for k, in := range g {
			toks[k] = in.term
		}
		out[at[j]] = toks
		t.cache[ask[j]] = toks
	}
	return out, nil
}

func (t *tokenizer) run(ctx context.Context, texts []string, capTok string, fn func(term string, doc int, col string)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runLocked(ctx, texts, capTok, func(term string, doc int, col string, _ int) { fn(term, doc, col) })
}

// runLocked inserts the texts as rows 0, 1, … and calls fn with each token
// occurrence, then rolls the rows back. Callers hold t.mu.
func (t *tokenizer) runLocked(ctx context.Context, texts []string, capTok string, fn func(term string, doc int, col string, offset int)) error {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, "INSERT INTO t (rowid, body, cap) VALUES (?, ?, ?)")
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	defer ins.Close()
	for i, text := range texts {
		if _, err := ins.ExecContext(ctx, i, text, capTok); err != nil {
			return fmt.Errorf("tokenize: %w", err)
		}
	}
	rows, err := tx.QueryContext(ctx, "SELECT term, doc, col, offset FROM v")
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var term, col string
		var doc, off int
		if err := rows.Scan(&term, &doc, &col, &off); err != nil {
			return fmt.Errorf("tokenize: %w", err)
		}
		if doc >= 0 && doc < len(texts) {
			fn(term, doc, col, off)
		}
	}
	return rows.Err()
}

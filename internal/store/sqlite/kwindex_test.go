package sqlite_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// TestKeywordIndexExact checks the in-process keyword index against FTS5's
// own scoring on the same database file: two handles, one that indexes
// every capsule and one that never does, must stream the same rows, scores
// equal to the last bit and ties in the same order (Keyword, KeywordN,
// KeywordTop with and without items) and give the same bounds — before
// and after the indexing handle deletes, replaces and fails items, adds
// new ones and deletes a capsule, which the index follows without a
// rebuild. The words are English with their inflections (porter stems
// "runs" and "running" alike: one token, two phrases), accents
// (remove_diacritics), numbers and capitals; some chunks repeat (ties); one
// capsule is alone in its rowids, two interleave (IDF over every row).
func TestKeywordIndexExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "capsuled.db")
	idx, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	idx.SetKeywordIndexMin(1)
	ref, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	ref.SetKeywordIndexMin(math.MaxInt)
	st, rs := idx.Capsules(), ref.Capsules()
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"solo", "a", "b"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(18, 3))
	vocab := strings.Fields(`run runs running runner cell cells protein proteins gene genes Café cafe naïve naive
		cancer tumour tumor 1990 2021 x86 insulin glucose mouse mice model models study studies effect effects
		risk patients patient therapy treatment dose blood pressure heart brain neuron neurons signal signalling
		Élan élan über uber résumé resume the of and in a to with is`)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(18, 4)), 1.05, 3, uint64(len(vocab)-1))
	chunks := zipfChunks(rng, zipf, vocab, 2, 30, 5)
	items := map[string][]string{}
	for i := range 30 {
		id := fmt.Sprintf("itm_s%03d", i)
		addItem(t, st, "solo", id, chunks()...)
		items["solo"] = append(items["solo"], id)
	}
	for i := range 20 {
		for _, c := range []string{"a", "b"} {
			id := fmt.Sprintf("itm_%s%03d", c, i)
			addItem(t, st, c, id, chunks()...)
			items[c] = append(items[c], id)
		}
	}
	for _, c := range []string{"solo", "a", "b"} {
		if err := st.KeywordReady(ctx, c); err != nil {
			t.Fatal(err)
		}
		if !sqlite.KeywordIndexed(ctx, idx, c) || sqlite.KeywordIndexed(ctx, ref, c) {
			t.Fatalf("%s: the indexing handle has no index, or the reference has one", c)
		}
	}
	line := func(id string, idx int, score float64) string {
		return fmt.Sprintf("%s/%d %x", id, idx, math.Float64bits(score))
	}
	stream := func(f func(fn func(string, int, float64) bool) error, stop int) string {
		var out []string
		if err := f(func(id string, idx int, score float64) bool {
			out = append(out, line(id, idx, score))
			return stop == 0 || len(out) < stop
		}); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	compare := func(round int, capsules []string) {
		for q := range 15 {
			capsule := capsules[q%len(capsules)]
			ts := make([]string, 1+rng.IntN(7))
			for i := range ts {
				ts[i] = strings.ToLower(vocab[rng.IntN(len(vocab))])
				switch rng.IntN(20) {
				case 0:
					ts[i] = "absent"
				case 1:
					ts[i] = "run-away" // two tokens: a phrase (the FTS5 path answers)
				}
			}
			gb, err := st.KeywordBounds(ctx, capsule, ts)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := rs.KeywordBounds(ctx, capsule, ts)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%x", gb) != fmt.Sprintf("%x", wb) {
				t.Fatalf("round %d %s %q: bounds %v, FTS5 %v", round, capsule, ts, gb, wb)
			}
			stop := []int{0, 1, 7, 40}[rng.IntN(4)]
			want := []int{1, 10, 100}[rng.IntN(3)]
			var sel []string
			if q%3 == 1 {
				for range 1 + rng.IntN(15) {
					if l := items[capsule]; len(l) > 0 {
						sel = append(sel, l[rng.IntN(len(l))])
					}
				}
			}
			for _, kind := range []string{"Keyword", "KeywordN", "KeywordTop"} {
				run := func(s *sqlite.CapsuleStore) string {
					return stream(func(fn func(string, int, float64) bool) error {
						switch kind {
						case "Keyword":
							return s.Keyword(ctx, capsule, ts, fn)
						case "KeywordN":
							return s.KeywordN(ctx, capsule, ts, want, fn)
						}
						return s.KeywordTop(ctx, capsule, ts, gb, sel, want, fn)
					}, stop)
				}
				if got, want := run(st), run(rs); got != want {
					t.Fatalf("round %d %s %s %q (stop %d, %d items):\n got %s\nwant %s", round, kind, capsule, ts, stop, len(sel), got, want)
				}
			}
		}
	}
	compare(0, []string{"solo", "a", "b"})

	// Changes through the indexing handle: deletes, replacements, failures,
	// new items.
	for _, c := range []string{"solo", "a"} {
		l := items[c]
		rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		for i, id := range l[:9] {
			switch i % 3 {
			case 0:
				if _, err := st.DeleteItem(ctx, c, id); err != nil {
					t.Fatal(err)
				}
			case 1:
				replaceItem(t, st, c, id, chunks()...)
			case 2:
				failItem(t, st, c, id)
			}
		}
		for i := range 4 {
			id := fmt.Sprintf("itm_%s_new%02d", c, i)
			addItem(t, st, c, id, chunks()...)
			items[c] = append(items[c], id)
		}
	}
	// The table's last rows replaced, then deleted: new rows take their
	// rowids again.
	last := items["a"][len(items["a"])-1]
	replaceItem(t, st, "a", last, chunks()...)
	replaceItem(t, st, "a", last, chunks()...)
	if _, err := st.DeleteItem(ctx, "a", last); err != nil {
		t.Fatal(err)
	}
	addItem(t, st, "a", "itm_a_newer", chunks()...)
	items["a"] = append(items["a"], "itm_a_newer")
	if _, err := st.DeleteCapsule(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if !sqlite.KeywordIndexed(ctx, idx, "solo") || !sqlite.KeywordIndexed(ctx, idx, "a") {
		t.Fatal("a change dropped the index")
	}
	compare(1, []string{"solo", "a"})

	// Closed (which writes the indexes' files) and opened again: the
	// indexes come from their files and answer the same, also after more
	// changes.
	open := func() {
		t.Helper()
		if idx, err = sqlite.Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		idx.SetKeywordIndexMin(1)
		st = idx.Capsules()
		for _, c := range []string{"solo", "a"} {
			if err := st.KeywordReady(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	reopen := func() {
		t.Helper()
		if err := idx.Close(); err != nil {
			t.Fatal(err)
		}
		open()
	}
	fromFile := func(want bool, capsules ...string) {
		t.Helper()
		for _, c := range capsules {
			if got := sqlite.KeywordIndexFromFile(ctx, idx, c); got != want {
				t.Fatalf("%s: index read from its file %v, want %v", c, got, want)
			}
		}
	}
	reopen()
	fromFile(true, "solo", "a")
	compare(10, []string{"solo", "a"})
	replaceItem(t, st, "a", "itm_a_newer", chunks()...)
	if _, err := st.DeleteItem(ctx, "solo", "itm_solo_new03"); err != nil {
		t.Fatal(err)
	}
	addItem(t, st, "solo", "itm_s_file", chunks()...)
	items["solo"] = append(items["solo"], "itm_s_file")
	compare(11, []string{"solo", "a"})
	// A change another handle made while this one was closed: that
	// capsule's index is built anew, the other's read.
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	addItem(t, rs, "solo", "itm_s_ref", chunks()...)
	items["solo"] = append(items["solo"], "itm_s_ref")
	open()
	fromFile(false, "solo")
	fromFile(true, "a")
	compare(12, []string{"solo", "a"})
	// Damaged files (a byte changed, the file cut short): built anew.
	files, err := filepath.Glob(filepath.Join(filepath.Dir(path), "kwindex", "*.kwix"))
	if err != nil || len(files) != 2 {
		t.Fatalf("keyword index files %v (%v), want two", files, err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			b[len(b)/2] ^= 0x10
		} else {
			b = b[:len(b)-9]
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	open()
	fromFile(false, "solo", "a")
	compare(13, []string{"solo", "a"})
	// The capsule alone in the table: document counts from the index.
	if _, err := st.DeleteCapsule(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	compare(2, []string{"solo"})
}

// replaceItem gives an item new chunks (requeued, then completed).
func replaceItem(t *testing.T, st *sqlite.CapsuleStore, capsule, id string, texts ...string) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	it, err := st.RequeueItem(ctx, capsule, id, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startItem(ctx, st, id, it.ContentHash, t0); err != nil {
		t.Fatal(err)
	}
	cs := make([]domain.Chunk, len(texts))
	for i, tx := range texts {
		cs[i] = domain.Chunk{Idx: i, Text: tx, End: len(tx)}
	}
	if _, err := st.CompleteItem(ctx, id, it.ContentHash, strings.Join(texts, "\n"), cs, t0); err != nil {
		t.Fatal(err)
	}
}

// failItem requeues an item and fails its ingestion (its chunks go).
func failItem(t *testing.T, st *sqlite.CapsuleStore, capsule, id string) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	it, err := st.RequeueItem(ctx, capsule, id, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startItem(ctx, st, id, it.ContentHash, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FailItem(ctx, id, it.ContentHash, "test", t0); err != nil {
		t.Fatal(err)
	}
}

// TestKeywordIndexWritesDuringBuild adds items while the index is built:
// each write lands either in the build's snapshot or in its queue (or, when
// it began before the build, drops the index for a rebuild), so the index
// ends equal to FTS5 either way.
func TestKeywordIndexWritesDuringBuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "capsuled.db")
	idx, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	ref, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	ref.SetKeywordIndexMin(math.MaxInt)
	st := idx.Capsules()
	if err := st.CreateCapsule(ctx, domain.Capsule{Name: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda")
	text := func(i int) string {
		var b strings.Builder
		for j := range 5 + i%7 {
			b.WriteString(words[(i*7+j*3)%len(words)] + " ")
		}
		return b.String()
	}
	for i := range 60 {
		addItem(t, st, "c", fmt.Sprintf("itm_%04d", i), text(i), text(i+1))
	}
	idx.SetKeywordIndexMin(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 60; i < 90; i++ {
			addItem(t, st, "c", fmt.Sprintf("itm_%04d", i), text(i))
			if i%10 == 0 {
				if _, err := st.DeleteItem(ctx, "c", fmt.Sprintf("itm_%04d", i-50)); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	err = st.KeywordReady(ctx, "c")
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if err := st.KeywordReady(ctx, "c"); err != nil { // again, if a write dropped it
		t.Fatal(err)
	}
	if !sqlite.KeywordIndexed(ctx, idx, "c") {
		t.Fatal("no index")
	}
	same := func(when string) {
		t.Helper()
		for _, ts := range [][]string{{"alpha"}, {"beta", "iota"}, words} {
			if got, want := keywordAll(t, st, "c", ts...), keywordAll(t, ref.Capsules(), "c", ts...); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s, %q:\n got %q\nwant %q", when, ts, got, want)
			}
		}
	}
	same("after the build")
	// A write the index cannot see (another handle, as another process's):
	// FTS5's totals differ from what the index expects, so it is dropped
	// and the query answered by FTS5; the next build sees the write.
	addItem(t, ref.Capsules(), "c", "itm_other", "alpha alpha beta unseen")
	same("after another handle's write")
	if got := keywordAll(t, st, "c", "alpha"); len(got) == 0 || !strings.HasPrefix(got[0], "itm_other/0 ") {
		t.Fatalf("alpha after another handle's write: %q, want itm_other first", got)
	}
	if err := st.KeywordReady(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if !sqlite.KeywordIndexed(ctx, idx, "c") {
		t.Fatal("no index after the rebuild")
	}
	same("after the rebuild")
}

// TestKeywordIndexQueriesDuringWrites queries an indexed capsule that
// shares the table with another (document counts from the vocabulary)
// while items are written to it: no deadlock between a query's locks and a
// commit's, and the final state equals FTS5's.
func TestKeywordIndexQueriesDuringWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "capsuled.db")
	idx, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	ref, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	ref.SetKeywordIndexMin(math.MaxInt)
	st := idx.Capsules()
	for _, c := range []string{"c", "other"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	addItem(t, st, "other", "itm_o", "alpha beta")
	for i := range 20 {
		addItem(t, st, "c", fmt.Sprintf("itm_%03d", i), fmt.Sprintf("alpha beta %d gamma", i))
	}
	idx.SetKeywordIndexMin(1)
	if err := st.KeywordReady(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		var err error
		for i := 20; i < 60 && err == nil; i++ {
			id := fmt.Sprintf("itm_%03d", i)
			if _, _, err = st.PutItem(ctx, domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText, URI: id, ContentHash: "h" + id,
				TimeAdded: time.Now(), TimeUpdated: time.Now()}); err != nil {
				break
			}
			if _, err = startItem(ctx, st, id, "h"+id, time.Now()); err != nil {
				break
			}
			text := fmt.Sprintf("alpha %d delta", i)
			_, err = st.CompleteItem(ctx, id, "h"+id, text, []domain.Chunk{{Text: text, End: len(text)}}, time.Now())
		}
		done <- err
	}()
	deadline := time.After(2 * time.Minute)
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-deadline:
			t.Fatal("queries and writes did not finish in 2 minutes (a deadlock?)")
		default:
			keywordAll(t, st, "c", "alpha", "delta")
		}
	}
	if got, want := keywordAll(t, st, "c", "alpha", "delta"), keywordAll(t, ref.Capsules(), "c", "alpha", "delta"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the writes:\n got %q\nwant %q", got, want)
	}
}

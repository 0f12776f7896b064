package sqlite_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// TestKeywordTopExact checks, over random term sets on a real index, that
// KeywordTop streams exactly what full scoring (KeywordN over the terms in
// TopOrder) streams: the same rows, scores equal to the last bit, ties in
// the same order, whatever depth is wanted, where the consumer stops, and
// whether the capsule is alone in its rowid range or interleaved with
// another. Word frequencies are Zipf-like, so bounds range from rare terms
// to terms in most chunks; some chunks repeat, so scores tie.
func TestKeywordTopExact(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	st := db.Capsules()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, c := range []string{"solo", "a", "b"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(18, 1))
	vocab := make([]string, 60)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%02dx", i)
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(18, 2)), 1.1, 2, uint64(len(vocab)-1))
	chunks := zipfChunks(rng, zipf, vocab, 3, 25, 6)
	for i := range 80 {
		addItem(t, st, "solo", fmt.Sprintf("itm_s%03d", i), chunks()...)
	}
	for i := range 40 {
		addItem(t, st, "a", fmt.Sprintf("itm_a%03d", i), chunks()...)
		addItem(t, st, "b", fmt.Sprintf("itm_b%03d", i), chunks()...)
	}
	stream := func(f func(fn func(string, int, float64) bool) error, stop int) []string {
		var out []string
		if err := f(func(id string, idx int, score float64) bool {
			out = append(out, fmt.Sprintf("%s/%d %x", id, idx, math.Float64bits(score)))
			return stop == 0 || len(out) < stop
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for round := range 45 {
		capsule := []string{"solo", "a", "b"}[round%3]
		ts := make([]string, 1+rng.IntN(8))
		for i := range ts {
			ts[i] = vocab[rng.IntN(len(vocab))]
			if rng.IntN(10) == 0 {
				ts[i] = "absent" // matches nothing
			}
		}
		bounds, err := st.KeywordBounds(ctx, capsule, ts)
		if err != nil {
			t.Fatal(err)
		}
		ordered, _ := sqlite.TopOrder(ts, bounds)
		want := []int{0, 1, 3, 10, 40, 100, 1000}[rng.IntN(7)]
		stop := []int{0, 0, 1, 5, 30, 120}[rng.IntN(6)]
		// Every third round keeps some items only (a filter): the
		// reference is the full ranking less the other items' chunks.
		var items []string
		keep := func(string) bool { return true }
		if round%3 == 1 {
			chosen := map[string]bool{}
			for range 1 + rng.IntN(40) {
				id := fmt.Sprintf("itm_%s%03d", capsule[:1], rng.IntN(40))
				chosen[id] = true
				items = append(items, id)
			}
			items = append(items, "itm_none") // an item the capsule lacks
			keep = func(id string) bool { return chosen[id] }
		}
		var ref []string
		if err := st.KeywordN(ctx, capsule, ordered, 1000, func(id string, idx int, score float64) bool {
			if keep(id) {
				ref = append(ref, fmt.Sprintf("%s/%d %x", id, idx, math.Float64bits(score)))
			}
			return stop == 0 || len(ref) < stop
		}); err != nil {
			t.Fatal(err)
		}
		got := stream(func(fn func(string, int, float64) bool) error {
			return st.KeywordTop(ctx, capsule, ts, bounds, items, want, fn)
		}, stop)
		if strings.Join(got, "\n") != strings.Join(ref, "\n") {
			t.Fatalf("%s %q (want %d, stop %d, %d items): KeywordTop gave %d hits, full scoring %d\n got %.8q\nwant %.8q",
				capsule, ts, want, stop, len(items), len(got), len(ref), got, ref)
		}
	}
	if err := st.KeywordTop(ctx, "solo", []string{"a"}, nil, nil, 1, func(string, int, float64) bool { return true }); err == nil {
		t.Fatal("bounds of another length: no error")
	}
}

// zipfChunks returns a generator of an item's chunks for the keyword tests:
// one to three chunks of minWords to minWords+spread-1 words drawn from
// vocab by zipf, each after the first item's chunks replaced, one time in
// dupOneIn, by the previous item's first chunk (an equal chunk: equal
// scores).
func zipfChunks(rng *rand.Rand, zipf *rand.Zipf, vocab []string, minWords, spread, dupOneIn int) func() []string {
	text := func() string {
		w := make([]string, minWords+rng.IntN(spread))
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	var prev []string
	return func() []string {
		cs := make([]string, 1+rng.IntN(3))
		for i := range cs {
			cs[i] = text()
			if prev != nil && rng.IntN(dupOneIn) == 0 {
				cs[i] = prev[0]
			}
		}
		prev = cs
		return cs
	}
}

package builtin

import (
	"slices"
	"sync"
	"testing"
)

// TestMemoKeepsReplies: an engine that remembers what it derived from
// earlier requests (shared by concurrent conversations) replies as one that
// remembers nothing, turn by turn.
func TestMemoKeepsReplies(t *testing.T) {
	t.Parallel()
	corpus := fakeCorpus{
		"n-router":  "The Zephyr 9 router in the lab resets itself when a firmware update fails halfway. Marta Ruiz keeps the spare unit.",
		"n-recover": "To recover a Zephyr 9 after a failed firmware update, hold the reset button for 30 seconds, then load firmware 2.4.1.",
		"n-marta":   "Marta Ruiz works in building C, room 214, and is on call on Tuesdays.",
		"t-101":     "Ticket 101, 4 May: the Infrastructure Review Committee approved twelve laptops for the Lyon office.",
		"t-102":     "Ticket 102: the Lyon office asked for new chairs and a second printer.",
		"log-3":     "Decision log, 3 June: PNK moved the Oslo release to Friday after the failed smoke test.",
		"memo-9":    "Memo: the Oslo release notes are in the shared folder, next to the “Smoke Test” checklist…",
	}
	questions := []string{
		"Where can I find the person who keeps the spare Zephyr 9 router?",
		"Which laptops did the IRC approve for the Lyon office?",
		"When did Priya Natarajan Kumar move the Oslo release?",
		"Does the Lyon ticket ask for chairs, while the Oslo memo lists the smoke test checklist?",
	}
	shared := New(Config{})
	bare := &Engine{cfg: Config{}.WithDefaults()} // no memo
	var wg sync.WaitGroup
	for range 3 {
		for _, q := range questions {
			wg.Go(func() {
				ids, turns, why := corpus.run(t, shared, q)
				want, wantTurns, wantWhy := corpus.run(t, bare, q)
				if !slices.Equal(ids, want) || turns != wantTurns || why != wantWhy {
					t.Errorf("%q: with the memo %v in %d turns (%s), without %v in %d (%s)", q, ids, turns, why, want, wantTurns, wantWhy)
				}
			})
		}
	}
	wg.Wait()
}

// TestCacheBound: a cache holds about twice its bound of keys, and gives
// each key's value whether remembered or computed again.
func TestCacheBound(t *testing.T) {
	t.Parallel()
	c := cache[string, int]{max: 10, cost: func(k string) int { return len(k) }}
	calls := 0
	get := func(k string) int {
		return c.get(k, func() int { calls++; return len(k) * 7 })
	}
	for range 3 {
		for _, k := range []string{"aaaa", "bbbb", "cccc", "dddd", "eeee", "ffff"} {
			if v := get(k); v != 28 {
				t.Fatalf("get(%q) = %d", k, v)
			}
			if n := len(c.cur) + len(c.old); n > 6 {
				t.Fatalf("%d keys held, bound 10 bytes of 4-byte keys", n)
			}
		}
	}
	calls = 0
	get("ffff")
	get("ffff")
	if calls != 0 {
		t.Errorf("a key just used was computed again (%d calls)", calls)
	}
}

package capsule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// gatedFakeEmbedder is a fake embedder FOR TESTS that records its batch
// sizes and holds its first call until released, so that the calls made
// meanwhile queue up.
type gatedFakeEmbedder struct {
	*FakeEmbedder
	release chan struct{}
	fail    error

	mu      sync.Mutex
	batches []int
}

func (g *gatedFakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	g.mu.Lock()
	first := len(g.batches) == 0
	g.batches = append(g.batches, len(texts))
	g.mu.Unlock()
	if first {
		<-g.release
	}
	if g.fail != nil {
		return nil, g.fail
	}
	return g.FakeEmbedder.Embed(ctx, texts)
}

func TestBatcher(t *testing.T) {
	t.Parallel()
	texts := func(caller, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("caller %d text %d", caller, i)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		max     int
		sizes   []int // texts per caller; caller 0 goes first and is held
		cancel  int   // a caller (> 0) whose context is cancelled while it waits; -1 none
		fail    error
		batches []int // the embedder's batch sizes
	}{
		{name: "waiting callers join one batch", max: 64, sizes: []int{2, 1, 3, 2, 1, 1, 2, 3}, cancel: -1, batches: []int{2, 13}},
		{name: "batches stop at max", max: 4, sizes: []int{1, 2, 2, 1, 3, 2}, cancel: -1, batches: []int{1, 4, 4, 2}},
		{name: "a call over max runs alone", max: 4, sizes: []int{1, 9, 1}, cancel: -1, batches: []int{1, 9, 1}},
		{name: "a caller that gave up is left out", max: 64, sizes: []int{1, 2, 2, 2}, cancel: 2, batches: []int{1, 4}},
		{name: "an error reaches every caller of the batch", max: 64, sizes: []int{1, 2, 2}, cancel: -1, fail: errors.New("upstream down"), batches: []int{1, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &gatedFakeEmbedder{FakeEmbedder: NewFakeEmbedder(8), release: make(chan struct{}), fail: tc.fail}
			b := newBatcher(g, tc.max)
			b.start()
			defer b.stop()
			type result struct {
				vecs [][]float32
				err  error
			}
			results := make([]result, len(tc.sizes))
			ctxs := make([]context.Context, len(tc.sizes))
			cancels := make([]context.CancelFunc, len(tc.sizes))
			for i := range ctxs {
				ctxs[i], cancels[i] = context.WithCancel(context.Background())
				defer cancels[i]()
			}
			var wg sync.WaitGroup
			call := func(i int) {
				wg.Go(func() {
					v, err := b.Embed(ctxs[i], texts(i, tc.sizes[i]))
					results[i] = result{v, err}
				})
			}
			call(0)
			waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.batches) == 1 })
			for i := 1; i < len(tc.sizes); i++ {
				call(i)
				waitFor(t, func() bool { return len(b.calls) == i })
			}
			if tc.cancel > 0 {
				cancels[tc.cancel]()
			}
			close(g.release)
			wg.Wait()
			g.mu.Lock()
			defer g.mu.Unlock()
			if !slices.Equal(g.batches, tc.batches) {
				t.Errorf("batches %v, want %v", g.batches, tc.batches)
			}
			for i, r := range results {
				switch {
				case i == tc.cancel:
					if !errors.Is(r.err, context.Canceled) {
						t.Errorf("caller %d that gave up: %v", i, r.err)
					}
				case tc.fail != nil:
					if !errors.Is(r.err, tc.fail) {
						t.Errorf("caller %d: error %v, want %v", i, r.err, tc.fail)
					}
				default:
					want, _ := g.FakeEmbedder.Embed(context.Background(), texts(i, tc.sizes[i]))
					if r.err != nil || len(r.vecs) != len(want) {
						t.Fatalf("caller %d: %d vectors, %v", i, len(r.vecs), r.err)
					}
					for j := range want {
						if !slices.Equal(r.vecs[j], want[j]) {
							t.Errorf("caller %d text %d got another text's vector", i, j)
						}
					}
				}
			}
		})
	}
}

func TestBatcherStoppedOrNotStarted(t *testing.T) {
	t.Parallel()
	g := &gatedFakeEmbedder{FakeEmbedder: NewFakeEmbedder(8), release: make(chan struct{})}
	close(g.release)
	b := newBatcher(g, 64)
	if v, err := b.Embed(context.Background(), []string{"a", "b"}); err != nil || len(v) != 2 {
		t.Fatalf("not started: %d vectors, %v", len(v), err)
	}
	b.start()
	b.stop()
	if _, err := b.Embed(context.Background(), []string{"a"}); !errors.Is(err, errBatcherStopped) {
		t.Fatalf("stopped: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

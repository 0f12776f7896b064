package capsule

import (
	"context"
	"errors"
	"sync"
)

// batcher joins the Embed calls of concurrent ingestion jobs into batches of
// up to max texts: each job ingests one item, often of a chunk or two, and
// the embedder is much faster per text in full batches. One goroutine runs
// the embedder: a call made while it is idle runs at once, and the calls
// made while it is busy go together in its next batch, so batching adds no
// delay of its own.
type batcher struct {
	emb Embedder
	max int

	calls chan *embedCall
	mu    sync.Mutex
	quit  chan struct{} // nil until start; closed by stop
	wg    sync.WaitGroup
}

type embedCall struct {
	ctx   context.Context
	texts []string
	vecs  [][]float32
	err   error
	done  chan struct{}
}

var errBatcherStopped = errors.New("the service is stopping")

func newBatcher(emb Embedder, max int) *batcher {
	return &batcher{emb: emb, max: max, calls: make(chan *embedCall, 1024)}
}

// start starts the batching goroutine.
func (b *batcher) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quit != nil {
		return
	}
	b.quit = make(chan struct{})
	b.wg.Add(1)
	go b.loop(b.quit)
}

// stop ends the batching goroutine after its current batch; calls still
// waiting fail.
func (b *batcher) stop() {
	b.mu.Lock()
	q := b.quit
	b.mu.Unlock()
	if q == nil {
		return
	}
	close(q)
	b.wg.Wait()
}

// Embed embeds texts, in a batch with other callers' texts.
func (b *batcher) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	b.mu.Lock()
	q := b.quit
	b.mu.Unlock()
	if q == nil {
		return b.emb.Embed(ctx, texts) // not started: no batching
	}
	c := &embedCall{ctx: ctx, texts: texts, done: make(chan struct{})}
	select {
	case b.calls <- c:
	case <-q:
		return nil, errBatcherStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		return c.vecs, c.err
	case <-q:
		return nil, errBatcherStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *batcher) loop(quit chan struct{}) {
	defer b.wg.Done()
	var next *embedCall // a call that did not fit in the last batch
	for {
		first := next
		next = nil
		if first == nil {
			select {
			case first = <-b.calls:
			case <-quit:
				return
			}
		}
		calls := []*embedCall{first}
		n := len(first.texts)
	gather:
		for n < b.max {
			select {
			case c := <-b.calls:
				if n+len(c.texts) > b.max {
					next = c
					break gather
				}
				calls = append(calls, c)
				n += len(c.texts)
			default:
				break gather
			}
		}
		b.run(calls, n)
	}
}

// run embeds the calls' texts in one embedder call and hands each its
// vectors. Calls whose callers gave up are left out; the batch is not
// cancelled with one caller's context (the others still want their
// vectors): an embedder call is bounded by the embedder's own time-outs.
func (b *batcher) run(calls []*embedCall, n int) {
	live := calls[:0]
	texts := make([]string, 0, n)
	for _, c := range calls {
		if c.ctx.Err() != nil {
			c.err = c.ctx.Err()
			close(c.done)
			continue
		}
		live = append(live, c)
		texts = append(texts, c.texts...)
	}
	if len(live) == 0 {
		return
	}
	ctx := live[0].ctx
	if len(live) > 1 {
		ctx = context.WithoutCancel(ctx)
	}
	vecs, err := b.emb.Embed(ctx, texts)
	off := 0
	for _, c := range live {
		switch {
		case err != nil:
			c.err = err
		case len(vecs) == len(texts):
			c.vecs = vecs[off : off+len(c.texts) : off+len(c.texts)]
		default:
			// No vectors: the caller reports the count mismatch.
		}
		off += len(c.texts)
		close(c.done)
	}
}

package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
	"capsuled/internal/store/sqlite"
)

// fakeGateEmbedder fails at once (fail set) or waits for its context to be
// cancelled, and says whether it was; it gives up after ten seconds, so a
// selection that never cancels fails the test instead of hanging it.
type fakeGateEmbedder struct {
	fail      error
	cancelled atomic.Bool
}

func (*fakeGateEmbedder) Dim() int        { return 64 }
func (*fakeGateEmbedder) ModelID() string { return "fake-gate-64" }
func (f *fakeGateEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return nil, waitForCancel(ctx, &f.cancelled)
}

// fakeGateStore is a real SQLite memory store whose SearchText fails at
// once (fail set) or waits for its context to be cancelled, as
// fakeGateEmbedder does.
type fakeGateStore struct {
	memory.Store
	fail      error
	cancelled atomic.Bool
}

func (f *fakeGateStore) SearchText(ctx context.Context, _, _ string, _ int, _ domain.LiveFilter) ([]domain.MemoryHit, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return nil, waitForCancel(ctx, &f.cancelled)
}

func waitForCancel(ctx context.Context, cancelled *atomic.Bool) error {
	select {
	case <-ctx.Done():
		cancelled.Store(true)
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("not cancelled within 10s")
	}
}

// TestSelectionErrorCancelsTheOtherRetriever checks that when the keyword
// search fails the query embedding is cancelled, and the other way round,
// and that the selection returns the first error, for every fusion.
func TestSelectionErrorCancelsTheOtherRetriever(t *testing.T) {
	t.Parallel()
	errSearch, errEmbed := errors.New("search failed"), errors.New("embedding failed")
	for _, fusion := range []memory.Fusion{memory.FusionCore, memory.FusionConvex, memory.FusionRRF} {
		for _, side := range []string{"keyword fails", "embedding fails"} {
			t.Run(string(fusion)+", "+side, func(t *testing.T) {
				t.Parallel()
				db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "capsuled.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				st, emb := &fakeGateStore{Store: db.Memory()}, &fakeGateEmbedder{}
				want := errSearch
				if side == "keyword fails" {
					st.fail = errSearch
				} else {
					emb.fail, want = errEmbed, errEmbed
				}
				svc, err := memory.New(memory.Config{Fusion: fusion}, memory.Deps{Store: st, Embedder: emb, Generators: []memory.Generator{memory.Extractive{}}})
				if err != nil {
					t.Fatal(err)
				}
				_, err = svc.Select(context.Background(), memory.Query{Namespace: "ns", Text: "where is the red kayak?"})
				if !errors.Is(err, want) {
					t.Fatalf("Select error %v, want %v", err, want)
				}
				if side == "keyword fails" && !emb.cancelled.Load() {
					t.Error("the query embedding was not cancelled after the keyword search failed")
				}
				if side == "embedding fails" && !st.cancelled.Load() {
					t.Error("the keyword search was not cancelled after the embedding failed")
				}
			})
		}
	}
}

package retrieval

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"capsuled/internal/domain"
)

// fakeGateSource holds one item with one chunk; its Keyword fails at once
// (fail set) or waits for its context to be cancelled, and says whether it
// was. It gives up after ten seconds, so a search that never cancels fails
// the test instead of hanging it.
type fakeGateSource struct {
	fail      error
	cancelled atomic.Bool
}

func (f *fakeGateSource) SearchableItems(context.Context, string) ([]domain.Item, error) {
	return []domain.Item{{ID: "itm_1", Capsule: "c", Kind: domain.ItemText}}, nil
}

func (f *fakeGateSource) ChunkVectors(_ context.Context, _ string, fn func(string, int, []float32) error) error {
	return fn("itm_1", 0, []float32{1, 0, 0, 0})
}

func (f *fakeGateSource) Keyword(ctx context.Context, _ string, _ []string, _ func(string, int, float64) bool) error {
	if f.fail != nil {
		return f.fail
	}
	return waitForCancel(ctx, &f.cancelled)
}

func (f *fakeGateSource) ChunkText(context.Context, string, int) (string, error) {
	return "text", nil
}

// fakeGateEmbedder fails at once (fail set) or waits for its context to be
// cancelled, as fakeGateSource's Keyword does.
type fakeGateEmbedder struct {
	fail      error
	cancelled atomic.Bool
}

func (f *fakeGateEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
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

// TestSearchErrorCancelsTheOtherSide checks that a hybrid search whose
// keyword side fails cancels the query embedding, and the other way round,
// and returns the failure, for both keyword normalisations (the query one
// also asks the source for each term's bound).
func TestSearchErrorCancelsTheOtherSide(t *testing.T) {
	t.Parallel()
	errKeyword, errEmbed := errors.New("keyword failed"), errors.New("embedding failed")
	for _, norm := range []KeywordNorm{KeywordNormQuery, KeywordNormSaturate} {
		for _, side := range []string{"keyword fails", "embedding fails"} {
			t.Run(string(norm)+", "+side, func(t *testing.T) {
				t.Parallel()
				src, emb := &fakeGateSource{}, &fakeGateEmbedder{}
				want := errKeyword
				if side == "keyword fails" {
					src.fail = errKeyword
				} else {
					emb.fail, want = errEmbed, errEmbed
				}
				e := New(src, emb, 4, Config{KeywordNorm: norm})
				_, err := e.Search(context.Background(), "c", domain.Query{Text: "red kayak", Wishlist: domain.Wishlist{Mode: domain.ModeHybrid}})
				if !errors.Is(err, want) {
					t.Fatalf("Search error %v, want %v", err, want)
				}
				if side == "keyword fails" && !emb.cancelled.Load() {
					t.Error("the query embedding was not cancelled after the keyword search failed")
				}
				if side == "embedding fails" && !src.cancelled.Load() {
					t.Error("the keyword search was not cancelled after the embedding failed")
				}
			})
		}
	}
}

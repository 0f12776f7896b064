package agent

import (
	"context"
	"sync"

	"capsuled/internal/domain"
)

// CapsuleSearcher is what CapsuleBackend needs of the capsule service.
type CapsuleSearcher interface {
	Query(ctx context.Context, capsule string, q domain.Query) ([]domain.Hit, error)
	ItemText(ctx context.Context, capsule, id string) (domain.Item, string, error)
}

// CapsuleBackend runs the tools against one capsule in process: search is
// the capsule query in hybrid mode, text_search in keyword mode (both with
// one chunk per item, so that limit counts items), read the item's
// extracted text. It remembers the best-scoring chunk that a search returned
// of each item, the evidence of a reported id.
type CapsuleBackend struct {
	svc     CapsuleSearcher
	capsule string

	mu   sync.Mutex
	best map[string]domain.Hit
}

// NewCapsuleBackend returns a Backend over capsule.
func NewCapsuleBackend(svc CapsuleSearcher, capsule string) *CapsuleBackend {
	return &CapsuleBackend{svc: svc, capsule: capsule, best: map[string]domain.Hit{}}
}

func (b *CapsuleBackend) query(ctx context.Context, text string, limit int, mode domain.SearchMode) ([]Hit, error) {
	limit = max(1, min(limit, domain.MaxQueryLimit))
	hits, err := b.svc.Query(ctx, b.capsule, domain.Query{Text: text, Limit: limit, Wishlist: domain.Wishlist{Mode: mode, MaxChunksPerItem: 1}})
	if err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(hits))
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range hits {
		if old, ok := b.best[h.Item.ID]; !ok || h.Score > old.Score {
			b.best[h.Item.ID] = h
		}
		out = append(out, Hit{ID: h.Item.ID, Title: h.Item.FileName, Text: h.Content, Score: h.Score})
	}
	return out, nil
}

// Search is the hybrid capsule query.
func (b *CapsuleBackend) Search(ctx context.Context, q string, limit int) ([]Hit, error) {
	return b.query(ctx, q, limit, domain.ModeHybrid)
}

// TextSearch is the keyword (BM25) capsule query.
func (b *CapsuleBackend) TextSearch(ctx context.Context, q string, limit int) ([]Hit, error) {
	return b.query(ctx, q, limit, domain.ModeKeyword)
}

// Read returns the item's extracted text.
func (b *CapsuleBackend) Read(ctx context.Context, id string) (string, error) {
	_, text, err := b.svc.ItemText(ctx, b.capsule, id)
	return text, err
}

// EvidenceChars is how much of an item's text stands as its evidence when
// no search returned a chunk of it.
const EvidenceChars = 600

// Evidence returns the evidence chunk of item id: the best-scoring chunk a
// search returned, else the start of the item's text (Idx 0, Score 0). An id
// that names no item of the capsule gives ok false.
func (b *CapsuleBackend) Evidence(ctx context.Context, id string) (domain.Hit, bool, error) {
	b.mu.Lock()
	h, ok := b.best[id]
	b.mu.Unlock()
	if ok {
		return h, true, nil
	}
	it, text, err := b.svc.ItemText(ctx, b.capsule, id)
	if err != nil {
		if e, ok := domain.AsError(err); ok && e.Kind == domain.KindNotFound {
			return domain.Hit{}, false, nil
		}
		return domain.Hit{}, false, err
	}
	return domain.Hit{Item: it, Content: cutText(text, EvidenceChars)}, true, nil
}

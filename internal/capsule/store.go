package capsule

import (
	"context"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
)

// Store is what the service needs from a storage backend.
type Store interface {
	retrieval.Source

	CreateCapsule(ctx context.Context, c domain.Capsule) error
	GetCapsule(ctx context.Context, name string) (domain.Capsule, error)
	ListCapsules(ctx context.Context) ([]domain.Capsule, error)
	// DeleteCapsule deletes a capsule and everything in it and returns the
	// content hashes its items held.
	DeleteCapsule(ctx context.Context, name string) ([]string, error)

	// PutItem adds an item or updates the capsule's item with its URI;
	// created reports a new row.
	PutItem(ctx context.Context, it domain.Item) (stored domain.Item, created bool, err error)
	GetItem(ctx context.Context, capsule, id string) (domain.Item, error)
	ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) ([]domain.Item, error)
	DeleteItem(ctx context.Context, capsule, id string) (domain.Item, error)
	RequeueItem(ctx context.Context, capsule, id string, at time.Time) (domain.Item, error)
	ItemText(ctx context.Context, capsule, id string) (string, error)

	// ClaimItem moves the longest-queued item to indexing (ErrNotFound: none).
	ClaimItem(ctx context.Context, at time.Time) (domain.Item, error)
	// CompleteItem and FailItem finish an indexing item atomically;
	// ErrConflict when it changed meanwhile.
	CompleteItem(ctx context.Context, id, hash, text string, chunks []domain.Chunk, at time.Time) (domain.Item, error)
	FailItem(ctx context.Context, id, hash, reason string, at time.Time) (domain.Item, error)
	// ResetIndexing requeues items a stopped process left indexing.
	ResetIndexing(ctx context.Context) (int, error)
	HashInUse(ctx context.Context, hash string) (bool, error)

	CachedVectors(ctx context.Context, model string, hashes [][32]byte) (map[[32]byte][]float32, error)
	CacheVectors(ctx context.Context, model string, vecs map[[32]byte][]float32) error
}

// Embedder embeds texts into unit vectors.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	ModelID() string
}

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
	// HasCapsule reports whether the capsule exists, without GetCapsule's
	// counts (which read every item and chunk row of the capsule's index:
	// too dear for each query and each added item of a large capsule).
	HasCapsule(ctx context.Context, name string) (bool, error)
	ListCapsules(ctx context.Context) ([]domain.Capsule, error)
	// DeleteCapsule deletes a capsule and everything in it and returns the
	// content hashes its items held.
	DeleteCapsule(ctx context.Context, name string) ([]string, error)

	// PutItem adds an item or updates the capsule's item with its URI;
	// created reports a new row.
	PutItem(ctx context.Context, it domain.Item) (stored domain.Item, created bool, err error)
	GetItem(ctx context.Context, capsule, id string) (domain.Item, error)
	// FindItem returns the capsule's item with the URI, else its oldest
	// item of the kind and file type holding the content hash (see
	// identity.go); ErrNotFound when there is neither.
	FindItem(ctx context.Context, capsule, uri string, kind domain.ItemKind, fileType, hash string) (domain.Item, error)
	ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) ([]domain.Item, error)
	DeleteItem(ctx context.Context, capsule, id string) (domain.Item, error)
	RequeueItem(ctx context.Context, capsule, id string, at time.Time) (domain.Item, error)
	ItemText(ctx context.Context, capsule, id string) (string, error)

	Jobs
	// StartItem moves an item to indexing for the job of the content hash
	// (the item must be queued, or indexing by a job run again);
	// ErrNotFound when it is gone, ErrConflict when it no longer needs the
	// job.
	StartItem(ctx context.Context, id, hash string, at time.Time) (domain.Item, error)
	// CompleteItem and FailItem finish an indexing item atomically;
	// ErrConflict when it changed meanwhile.
	CompleteItem(ctx context.Context, id, hash, text string, chunks []domain.Chunk, at time.Time) (domain.Item, error)
	FailItem(ctx context.Context, id, hash, reason string, at time.Time) (domain.Item, error)
	HashInUse(ctx context.Context, hash string) (bool, error)

	// EmbeddingSpace is the embedding model recorded for the chunk
	// vectors (zero: none yet). UseEmbeddingSpace records one and removes,
	// in the same transaction, the vectors not of it (all of them when
	// another model was recorded, those of another width when none was),
	// returning how many chunks lost theirs.
	EmbeddingSpace(ctx context.Context) (domain.EmbeddingSpace, error)
	UseEmbeddingSpace(ctx context.Context, sp domain.EmbeddingSpace, at time.Time) (removed int, err error)
	// VectorBacklog counts the ready items with chunks without a vector,
	// and those chunks; ItemsWithoutVectors lists such items in id order
	// after the id after.
	VectorBacklog(ctx context.Context) (items, chunks int, err error)
	ItemsWithoutVectors(ctx context.Context, after string, limit int) ([]domain.Item, error)
	// ItemChunks returns an item's chunks with their vectors (nil where a
	// chunk has none).
	ItemChunks(ctx context.Context, itemID string) ([]domain.Chunk, error)
	// SetChunkVectors gives the item's chunks without a vector those of
	// chunks (by Idx), while the item is ready with the content hash
	// (else ErrConflict), and returns the item.
	SetChunkVectors(ctx context.Context, itemID, hash string, chunks []domain.Chunk) (domain.Item, error)

	CachedVectors(ctx context.Context, model string, hashes [][32]byte) (map[[32]byte][]float32, error)
	CacheVectors(ctx context.Context, model string, vecs map[[32]byte][]float32) error
}

// Jobs is the store's durable queue of ingestion jobs: one job per item
// write that queued an item, enqueued by the store in the write's
// transaction, so that a job exists exactly when its item is queued.
type Jobs interface {
	// StartIngest works the jobs with step, at most workers at once in
	// this process, until StopIngest. A job whose step fails is retried;
	// one whose process stopped is run again, by any process sharing the
	// store; two processes never run one job at once (unless it outlives
	// the store's lease and is presumed dead).
	// embed works the job that embeds the chunks without a vector (see
	// EnqueueEmbed), a bounded part at a time: more says that chunks
	// remain (the job runs again at once); nil: this process leaves such
	// a job to one that can embed.
	StartIngest(ctx context.Context, workers int, step func(ctx context.Context, itemID, contentHash string) error,
		embed func(ctx context.Context) (more bool, err error)) error
	// EnqueueEmbed inserts the durable job that embeds every searchable
	// chunk without a vector, unless one already waits or runs.
	EnqueueEmbed(ctx context.Context) error
	// StopIngest stops working jobs, letting running ones finish until ctx
	// ends.
	StopIngest(ctx context.Context) error
}

// Embedder embeds texts into unit vectors.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	ModelID() string
}

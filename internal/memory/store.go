package memory

import (
	"context"
	"time"

	"capsuled/internal/domain"
)

// Store is the persistence the memory service needs. Every backend passes
// the storetest.MemoryStore suite.
type Store interface {
	// InsertMemories stores recs in one transaction, in order. A record
	// with a DedupeKey whose (namespace, conversation, key) is already
	// stored, or whose id is already stored in the same namespace, is not
	// stored again: its result names the existing memory with Created false.
	// An id stored in another namespace is a domain.ErrConflict.
	InsertMemories(ctx context.Context, recs []domain.MemoryRecord) ([]domain.StoredMemory, error)
	// StoredTurnKeys returns which of the dedupe keys a memory of the
	// namespace and conversation already holds (a key absent from the map
	// is not stored).
	StoredTurnKeys(ctx context.Context, ns, conversation string, keys []string) (map[string]bool, error)
	// GetMemory returns one memory of the namespace (domain.ErrNotFound
	// when it is not in that namespace).
	GetMemory(ctx context.Context, ns, id string) (domain.Memory, error)
	// GetMemories returns the memories of the namespace with the given ids,
	// in the order of ids, leaving out ids it does not hold.
	GetMemories(ctx context.Context, ns string, ids []string) ([]domain.Memory, error)
	// UpdateMemory replaces a memory's content, search text, metadata,
	// times, supersession and vector (domain.ErrNotFound when absent).
	UpdateMemory(ctx context.Context, rec domain.MemoryRecord) error
	// Supersede marks old as no longer valid from at, superseded by newID.
	Supersede(ctx context.Context, ns, oldID, newID string, at time.Time) error
	// DeleteMemory deletes one memory (domain.ErrNotFound when absent).
	DeleteMemory(ctx context.Context, ns, id string) error
	// ListMemories pages through a namespace's memories, newest first;
	// the returned cursor is "" on the last page.
	ListMemories(ctx context.Context, ns string, f domain.MemoryListFilter) ([]domain.Memory, string, error)
	// SearchText ranks the namespace's memories by BM25 of their search
	// text against the words of query, best first, at most limit.
	SearchText(ctx context.Context, ns, query string, limit int, f domain.LiveFilter) ([]domain.MemoryHit, error)
	// Vectors returns the vectors stored with the given embedding model for
	// the namespace's memories.
	Vectors(ctx context.Context, ns, model string, f domain.LiveFilter) ([]domain.MemoryVector, error)
	// Recent returns the namespace's newest memories of a kind (any kind
	// when empty), newest first.
	Recent(ctx context.Context, ns string, kind domain.MemoryKind, limit int, f domain.LiveFilter) ([]domain.Memory, error)
	// Owners returns, for each id that is stored, its namespace.
	Owners(ctx context.Context, ids []string) (map[string]string, error)
	// Namespaces lists the namespaces that hold memories or failures.
	Namespaces(ctx context.Context, now time.Time) ([]domain.NamespaceStats, error)
	// Namespace returns one namespace's counts (domain.ErrNotFound when it
	// holds nothing).
	Namespace(ctx context.Context, ns string, now time.Time) (domain.NamespaceStats, error)
	// DeleteNamespace deletes everything of a namespace and says how many
	// memories went (domain.ErrNotFound when it held nothing).
	DeleteNamespace(ctx context.Context, ns string) (int, error)
	// ExportNamespace calls fn with every memory of a namespace, oldest
	// first.
	ExportNamespace(ctx context.Context, ns string, fn func(domain.Memory) error) error
	// RecordFailure stores a failure.
	RecordFailure(ctx context.Context, f domain.MemoryFailure) error
	// Failures lists a namespace's failures, newest first.
	Failures(ctx context.Context, ns string, limit int) ([]domain.MemoryFailure, error)
	// DeleteExpired deletes memories whose expiry is at or before now.
	DeleteExpired(ctx context.Context, now time.Time) (int, error)
}

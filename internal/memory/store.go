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
	InsertMemories(ctx context.Context, recs []Record) ([]Stored, error)
	// GetMemory returns one memory of the namespace (domain.ErrNotFound
	// when it is not in that namespace).
	GetMemory(ctx context.Context, ns, id string) (domain.Memory, error)
	// GetMemories returns the memories of the namespace with the given ids,
	// in the order of ids, leaving out ids it does not hold.
	GetMemories(ctx context.Context, ns string, ids []string) ([]domain.Memory, error)
	// UpdateMemory replaces a memory's content, search text, metadata,
	// times, supersession and vector (domain.ErrNotFound when absent).
	UpdateMemory(ctx context.Context, rec Record) error
	// Supersede marks old as no longer valid from at, superseded by newID.
	Supersede(ctx context.Context, ns, oldID, newID string, at time.Time) error
	// DeleteMemory deletes one memory (domain.ErrNotFound when absent).
	DeleteMemory(ctx context.Context, ns, id string) error
	// ListMemories pages through a namespace's memories, newest first;
	// the returned cursor is "" on the last page.
	ListMemories(ctx context.Context, ns string, f ListFilter) ([]domain.Memory, string, error)
	// SearchText ranks the namespace's memories by BM25 of their search
	// text against the words of query, best first, at most limit.
	SearchText(ctx context.Context, ns, query string, limit int, f LiveFilter) ([]Hit, error)
	// Vectors returns the vectors stored with the given embedding model for
	// the namespace's memories.
	Vectors(ctx context.Context, ns, model string, f LiveFilter) ([]Vector, error)
	// Recent returns the namespace's newest memories of a kind (any kind
	// when empty), newest first.
	Recent(ctx context.Context, ns string, kind domain.MemoryKind, limit int, f LiveFilter) ([]domain.Memory, error)
	// Owners returns, for each id that is stored, its namespace.
	Owners(ctx context.Context, ids []string) (map[string]string, error)
	// Namespaces lists the namespaces that hold memories or failures.
	Namespaces(ctx context.Context, now time.Time) ([]NamespaceStats, error)
	// Namespace returns one namespace's counts (domain.ErrNotFound when it
	// holds nothing).
	Namespace(ctx context.Context, ns string, now time.Time) (NamespaceStats, error)
	// DeleteNamespace deletes everything of a namespace and says how many
	// memories went (domain.ErrNotFound when it held nothing).
	DeleteNamespace(ctx context.Context, ns string) (int, error)
	// ExportNamespace calls fn with every memory of a namespace, oldest
	// first.
	ExportNamespace(ctx context.Context, ns string, fn func(domain.Memory) error) error
	// RecordFailure stores a failure.
	RecordFailure(ctx context.Context, f Failure) error
	// Failures lists a namespace's failures, newest first.
	Failures(ctx context.Context, ns string, limit int) ([]Failure, error)
	// DeleteExpired deletes memories whose expiry is at or before now.
	DeleteExpired(ctx context.Context, now time.Time) (int, error)
}

// A Record is a memory as stored: the memory, the text its BM25 index
// holds, its deduplication key and its vector.
type Record struct {
	Memory domain.Memory
	// SearchText is what the full-text index holds (for turns: the speaker
	// and the text). Default: the content.
	SearchText string
	// EmbedText is what the memory's vector is computed from. Default:
	// SearchText.
	EmbedText string
	// DedupeKey, when set, makes the record unique within its namespace and
	// conversation.
	DedupeKey string
	// Vector and VectorModel are the memory's embedding, if any.
	Vector      []float32
	VectorModel string
}

// Stored is the result of storing one record.
type Stored struct {
	ID      string
	Created bool // false when an equal record was already there
}

// ListFilter selects and pages memories.
type ListFilter struct {
	LiveFilter
	Kind         domain.MemoryKind // any when empty
	Conversation string            // any when empty
	Limit        int
	Cursor       string // from the previous page
}

// LiveFilter says which memories count as live.
type LiveFilter struct {
	Now               time.Time // memories expiring at or before Now are left out...
	IncludeExpired    bool      // ...unless this is set
	IncludeSuperseded bool      // superseded facts are left out unless this is set
}

// A Hit is one memory found by a search, with its score (higher is better).
type Hit struct {
	ID    string
	Score float64
}

// A Vector is a memory's stored embedding.
type Vector struct {
	ID  string
	Vec []float32
}

// NamespaceStats are a namespace's counts.
type NamespaceStats struct {
	domain.Namespace
	Turns, Facts, Notes, Failures int
}

// A Failure is a recorded failure of background learning.
type Failure struct {
	ID           string
	Namespace    string
	Stage        string // "extraction"
	Error        string
	Attempts     int
	Conversation string
	Input        string
	CreatedAt    time.Time
}

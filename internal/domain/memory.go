package domain

import (
	"regexp"
	"time"
)

// GlobalNamespace is the namespace used when a memory request names none.
const GlobalNamespace = "global"

// namespaceName: 1 to 128 characters of letters, digits, '.', '_', '-' and ':',
// starting with a letter or digit.
var namespaceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidateNamespace reports whether ns is a valid namespace name.
func ValidateNamespace(ns string) error {
	if !namespaceName.MatchString(ns) {
		return Invalid("namespace", "namespace %q must be 1 to 128 characters of letters, digits, '.', '_', '-' or ':', starting with a letter or digit", ns)
	}
	return nil
}

// MemoryKind says where a memory came from.
type MemoryKind string

// The kinds of memory.
const (
	MemoryTurn MemoryKind = "turn" // a conversation turn, stored as said
	MemoryFact MemoryKind = "fact" // a durable fact extracted from turns
	MemoryNote MemoryKind = "note" // written directly through the API
)

// A Memory is one remembered thing in a namespace.
type Memory struct {
	ID           string
	Namespace    string
	Kind         MemoryKind
	Role         string // for turns: user or assistant
	Content      string
	Conversation string // conversation id, for turns
	Metadata     map[string]any
	CreatedAt    time.Time
	UpdatedAt    time.Time
	ValidFrom    time.Time  // when the fact became true (facts) or was said (turns)
	InvalidFrom  *time.Time // when a later fact superseded it
	SupersededBy string
	ExpiresAt    *time.Time
}

// A Namespace summarises one memory namespace.
type Namespace struct {
	Name        string
	MemoryCount int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// The types below are what a memory store keeps and returns: the memory
// service (internal/memory) declares the store interface that uses them,
// and every backend (internal/store/...) implements it with these types
// alone.

// A MemoryRecord is a memory as stored: the memory, the text its BM25
// index holds, its deduplication key and its vector.
type MemoryRecord struct {
	Memory Memory
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

// StoredMemory is the result of storing one MemoryRecord.
type StoredMemory struct {
	ID      string
	Created bool // false when an equal record was already there
}

// MemoryListFilter selects and pages memories.
type MemoryListFilter struct {
	LiveFilter
	Kind         MemoryKind // any when empty
	Conversation string     // any when empty
	Limit        int
	Cursor       string // from the previous page
}

// LiveFilter says which memories count as live.
type LiveFilter struct {
	Now               time.Time // memories expiring at or before Now are left out...
	IncludeExpired    bool      // ...unless this is set
	IncludeSuperseded bool      // superseded facts are left out unless this is set
}

// A MemoryHit is one memory found by a search, with its score (higher is
// better).
type MemoryHit struct {
	ID    string
	Score float64
}

// A MemoryVector is a memory's stored embedding.
type MemoryVector struct {
	ID  string
	Vec []float32
}

// NamespaceStats are a namespace's counts.
type NamespaceStats struct {
	Namespace
	Turns, Facts, Notes, Failures int
}

// A MemoryFailure is a recorded failure of background learning.
type MemoryFailure struct {
	ID           string
	Namespace    string
	Stage        string // "extraction"
	Error        string
	Attempts     int
	Conversation string
	Input        string
	CreatedAt    time.Time
}

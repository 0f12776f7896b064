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

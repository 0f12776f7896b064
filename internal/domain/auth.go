package domain

import (
	"slices"
	"time"
)

// Scope is a permission carried by an API key.
type Scope string

// The scopes. admin implies every other scope.
const (
	ScopeChat          Scope = "chat"           // POST /v1/chat/completions
	ScopeMemory        Scope = "memory"         // memory chat and memory management; minting access tokens
	ScopeCapsulesRead  Scope = "capsules:read"  // query, list and read capsules and items
	ScopeCapsulesWrite Scope = "capsules:write" // create and delete capsules, add and delete items
	ScopeAdmin         Scope = "admin"          // manage keys; implies every scope
)

// AllScopes lists every scope in a stable order.
var AllScopes = []Scope{ScopeChat, ScopeMemory, ScopeCapsulesRead, ScopeCapsulesWrite, ScopeAdmin}

// ParseScope returns the Scope named s.
func ParseScope(s string) (Scope, bool) {
	for _, sc := range AllScopes {
		if string(sc) == s {
			return sc, true
		}
	}
	return "", false
}

// A Key is an API key as stored: never the secret itself, only its hash.
type Key struct {
	ID         string
	Name       string
	Prefix     string // the first characters of the secret, shown to identify it
	Hash       []byte // SHA-256 of the secret; secrets are 256-bit random, so no slow hash is needed
	Scopes     []Scope
	Capsules   []string // allow-list of capsule names; empty means all
	Namespaces []string // allow-list of memory namespaces; empty means all
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Principal is who a request acts for: an API key, directly or through an
// access token minted from it.
type Principal struct {
	KeyID      string
	KeyName    string
	Scopes     []Scope
	Capsules   []string
	Namespaces []string
	// TokenID is set when the request authenticated with an access token.
	TokenID string
}

// Has reports whether p carries scope s (admin carries all).
func (p *Principal) Has(s Scope) bool {
	return slices.Contains(p.Scopes, s) || slices.Contains(p.Scopes, ScopeAdmin)
}

// CanCapsule reports whether p's capsule allow-list admits the capsule.
func (p *Principal) CanCapsule(name string) bool {
	return len(p.Capsules) == 0 || slices.Contains(p.Capsules, name)
}

// CanNamespace reports whether p's namespace allow-list admits ns.
func (p *Principal) CanNamespace(ns string) bool {
	return len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, ns)
}

// An AccessToken is a signed, expiring credential for the memory operation,
// minted from a key with the memory scope. It carries the key's namespace
// allow-list (narrowed further if the minting request asked) and is refused
// once its key is revoked.
type AccessToken struct {
	ID         string
	KeyID      string
	Namespaces []string
	IssuedAt   time.Time
	ExpiresAt  time.Time
}

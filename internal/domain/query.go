package domain

import "time"

// Query limits.
const (
	DefaultQueryLimit = 10
	MaxQueryLimit     = 100
	// MaxQueryBytes bounds a capsule query's text: long enough for a query
	// that is itself a document (BEIR's ArguAna and Quora queries are corpus
	// passages). The query's vector is computed from what fits the
	// embedding model; its keyword side reads the whole text.
	MaxQueryBytes = 16 << 10
)

// SearchMode selects which retrievers a query uses.
type SearchMode string

// The search modes.
const (
	ModeHybrid   SearchMode = "hybrid"   // BM25 and dense vectors, fused
	ModeSemantic SearchMode = "semantic" // dense vectors only
	ModeKeyword  SearchMode = "keyword"  // BM25 only
)

// A Query is a search over one capsule.
type Query struct {
	Text     string
	Limit    int
	Wishlist Wishlist
}

// Wishlist is the query's optional filters and preferences. Zero values mean
// "no constraint". Filters apply inside retrieval, so a filtered query still
// returns up to Limit results when that many match.
type Wishlist struct {
	Mode             SearchMode
	Kinds            []ItemKind
	FileTypes        []string
	ItemIDs          []string
	URIPrefix        string
	AddedAfter       *time.Time
	AddedBefore      *time.Time
	AuthoredAfter    *time.Time
	AuthoredBefore   *time.Time
	Metadata         []MetadataFilter
	MaxChunksPerItem int
	MinScore         float64
	Recency          *Recency
}

// MetadataOp is a comparison on one metadata key.
type MetadataOp string

// The metadata operators.
const (
	OpEq     MetadataOp = "eq"
	OpNe     MetadataOp = "ne"
	OpIn     MetadataOp = "in"
	OpNin    MetadataOp = "nin"
	OpGt     MetadataOp = "gt"
	OpGte    MetadataOp = "gte"
	OpLt     MetadataOp = "lt"
	OpLte    MetadataOp = "lte"
	OpExists MetadataOp = "exists"
)

// A MetadataFilter keeps items whose metadata Key compares true with Value.
// For in/nin Value is a []any; for exists it is a bool.
type MetadataFilter struct {
	Key   string
	Op    MetadataOp
	Value any
}

// Recency prefers newer items: a result's score is blended with a decay
// exp(-age·ln2/HalfLife) of the chosen time field, with the given Weight in
// [0, 1].
type Recency struct {
	Field    string // "time_authored" or "time_added"
	HalfLife time.Duration
	Weight   float64
}

package domain

import (
	"fmt"
	"regexp"
	"time"
)

// A Capsule is a named collection of items that is searched as one.
//
// A capsule's Name is its handle everywhere: in paths (/capsules/{name}), in
// hosts ({name}.{suffix}) and in key allow-lists, so it is a DNS label.
type Capsule struct {
	Name        string
	Description string
	CreatedAt   time.Time
	ItemCount   int
	ChunkCount  int
}

// capsuleName is a DNS label: lower-case letters, digits and inner hyphens.
var capsuleName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateCapsuleName reports whether name can be a capsule's handle.
func ValidateCapsuleName(name string) error {
	if !capsuleName.MatchString(name) {
		return Invalid("name", "capsule name %q must be 1 to 63 lower-case letters, digits or inner hyphens (a DNS label)", name)
	}
	return nil
}

// ItemKind says how an item was added.
type ItemKind string

// The kinds of item.
const (
	ItemText ItemKind = "text" // added as text in a JSON body
	ItemFile ItemKind = "file" // uploaded as a file
)

// ItemStatus is where an item is in ingestion.
//
// queued → indexing → ready, or → failed with a reason. An item is searchable
// only when ready, and becomes so all at once: its chunks are written in the
// same transaction that marks it ready.
type ItemStatus string

// The states of an item.
const (
	StatusQueued   ItemStatus = "queued"
	StatusIndexing ItemStatus = "indexing"
	StatusReady    ItemStatus = "ready"
	StatusFailed   ItemStatus = "failed"
)

// An Item is one document in a capsule: a text or a file.
type Item struct {
	ID           string
	Capsule      string
	Kind         ItemKind
	URI          string
	FileName     string
	FileType     string // MIME type
	Size         int64  // bytes of the original text or file
	ContentHash  string // hex sha256 of the original bytes
	Metadata     map[string]any
	TimeAdded    time.Time
	TimeAuthored *time.Time
	TimeUpdated  time.Time
	Status       ItemStatus
	Error        string // why ingestion failed, when Status is failed
	ChunkCount   int
}

// A Chunk is a searchable slice of an item's extracted text.
type Chunk struct {
	ItemID string
	Idx    int    // 0-based position within the item
	Text   string // the chunk's text as indexed
	Start  int    // byte offset of the chunk in the item's extracted text
	End    int    // byte offset one past the chunk's end
	Tokens int    // length in the embedding model's word pieces
	Vector []float32
}

// An EmbeddingSpace is the embedding model that made a store's chunk
// vectors: its id and vector width. A store holds vectors of one space
// only.
type EmbeddingSpace struct {
	Model      string
	Dimensions int
}

// String names the space for messages: "model (384 dimensions)".
func (e EmbeddingSpace) String() string {
	return fmt.Sprintf("%q (%d dimensions)", e.Model, e.Dimensions)
}

// A Hit is one result of a capsule query: a chunk with its item's metadata.
type Hit struct {
	Item    Item
	Idx     int
	Content string
	Score   float64 // in [0, 1], higher is better
}

// IngestCounts are one process's ingestion outcomes since it started: items
// indexed and failed, the chunks indexed, and the seconds the jobs took.
type IngestCounts struct {
	Indexed, Failed, Chunks int64
	Seconds                 float64
}

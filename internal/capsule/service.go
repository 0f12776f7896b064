package capsule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"capsuled/internal/domain"
	"capsuled/internal/ingest"
	"capsuled/internal/ingest/chunk"
	"capsuled/internal/ingest/detect"
	"capsuled/internal/ingest/parse"
	"capsuled/internal/retrieval"
)

// Config configures a Service. Zero values take the documented defaults.
type Config struct {
	// Store is the storage backend. Required.
	Store Store
	// Embedder embeds chunks and queries; nil turns semantic search off
	// (keyword search still works).
	Embedder Embedder
	// Tokens counts text in the embedding model's tokens for chunking.
	// Default: an approximation (words × 4/3) when no tokenizer is given.
	Tokens chunk.TokenCounter
	// DataDir holds the original bytes of items (DataDir/blobs) and the
	// HNSW graphs of large capsules (DataDir/graphs, unless
	// Retrieval.GraphDir names another folder). Required.
	DataDir string
	// Workers is the most ingestion jobs this process works at once (one
	// item each; their embedder calls are joined into batches of up to
	// EmbedBatch chunks). Default DefaultWorkers.
	Workers int
	// StopTimeout is how long Close lets running ingestion jobs finish
	// before it cancels them (they run again later). Default 10s.
	StopTimeout time.Duration
	// JobTimeout bounds one item's extraction, chunking and embedding; an
	// item over it fails with the reason. Default DefaultJobTimeout.
	JobTimeout time.Duration
	// MaxChunksPerItem fails an item that yields more chunks. Default
	// DefaultMaxChunksPerItem.
	MaxChunksPerItem int
	// EmbedBatch is the most chunks embedded in one call. Default 64.
	EmbedBatch int
	// Chunking tunes the chunker (default: ingest's defaults with heading
	// context).
	Chunking *chunk.Options
	// MaxExtractBytes bounds what extraction reads of one item. Default
	// parse.DefaultMaxBytes.
	MaxExtractBytes int64
	// Retrieval tunes search and fusion.
	Retrieval retrieval.Config
	// BlobSweepDelay is how long after Start the sweep for blobs no item
	// holds begins. The sweep is housekeeping after a crash (one store
	// lookup per blob: about 2 CPU-s for 130,000 blobs on SQLite) and waits
	// so as not to compete with a start's own work, the first loads of
	// large capsules. Default DefaultBlobSweepDelay.
	BlobSweepDelay time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Log receives ingestion events. Default slog.Default().
	Log *slog.Logger
}

// Service is the capsule service.
type Service struct {
	cfg    Config
	st     Store
	emb    Embedder
	tokens chunk.TokenCounter
	chunk  chunk.Options
	blobs  blobs
	engine *retrieval.Engine
	log    *slog.Logger
	// batcher joins the embedder calls of concurrent jobs (nil: no
	// embedder).
	batcher *batcher

	blobMu sync.Mutex // orders blob placement and removal with item rows

	// statusMu guards the last VectorStatus and when it was counted.
	statusMu sync.Mutex
	status   VectorStatus
	statusAt time.Time

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever an item finishes
	started bool
	// stopBackground cancels the work Start began in the background (the
	// blob clean-up); background waits for it.
	stopBackground context.CancelFunc
	background     sync.WaitGroup

	counts ingestCounts
}

// DefaultWorkers is the default Config.Workers.
const DefaultWorkers = 16

// DefaultBlobSweepDelay is the default Config.BlobSweepDelay.
const DefaultBlobSweepDelay = time.Minute

// New returns a Service; Start starts its workers.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("capsule: a store is required")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("capsule: a data directory is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.JobTimeout <= 0 {
		cfg.JobTimeout = DefaultJobTimeout
	}
	if cfg.MaxChunksPerItem <= 0 {
		cfg.MaxChunksPerItem = DefaultMaxChunksPerItem
	}
	if cfg.EmbedBatch <= 0 {
		cfg.EmbedBatch = 64
	}
	if cfg.BlobSweepDelay <= 0 {
		cfg.BlobSweepDelay = DefaultBlobSweepDelay
	}
	if cfg.MaxExtractBytes <= 0 {
		cfg.MaxExtractBytes = parse.DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Service{
		cfg: cfg, st: cfg.Store, emb: cfg.Embedder, tokens: cfg.Tokens, log: cfg.Log,
		blobs:   blobs{dir: filepath.Join(cfg.DataDir, "blobs")},
		changed: make(chan struct{}),
	}
	if s.emb != nil {
		s.batcher = newBatcher(s.emb, cfg.EmbedBatch)
	}
	if s.tokens == nil {
		s.tokens = approxTokens{}
	}
	if cfg.Chunking != nil {
		s.chunk = *cfg.Chunking
	} else {
		s.chunk = chunk.Options{HeadingContext: true}
	}
	var qe retrieval.QueryEmbedder
	dim := 0
	if s.emb != nil {
		qe, dim = s.emb, s.emb.Dim()
	}
	rc := cfg.Retrieval
	if rc.Now == nil {
		rc.Now = cfg.Now
	}
	if rc.GraphDir == "" {
		// Large capsules' HNSW graphs, kept between runs (a store that
		// searches itself, PostgreSQL, has none).
		rc.GraphDir = filepath.Join(cfg.DataDir, "graphs")
	}
	s.engine = retrieval.New(cfg.Store, qe, dim, rc)
	return s, nil
}

// Semantic reports whether semantic search is on.
func (s *Service) Semantic() bool { return s.emb != nil }

// Engine is the retrieval engine (for benchmarks).
func (s *Service) Engine() *retrieval.Engine { return s.engine }

// Start checks the store's embedding model (see vectors.go: a store whose
// vectors another model made is refused with ModelChangedError), starts
// removing blobs no item holds in the background (collectBlobs) and
// starts working the store's jobs (jobs a stopped
// process left are run again: see Jobs), until Close; with an embedding
// model it queues the embedding of searchable chunks without a vector.
func (s *Service) Start(ctx context.Context) error {
	var embed func(context.Context) (bool, error)
	if s.emb != nil {
		if err := s.checkSpace(ctx); err != nil {
			return err
		}
		embed = s.embedBacklog
	}
	if s.batcher != nil {
		s.batcher.start()
	}
	if err := s.st.StartIngest(ctx, s.cfg.Workers, s.ingestItem, embed); err != nil {
		if s.batcher != nil {
			s.batcher.stop()
		}
		return fmt.Errorf("start ingestion: %w", err)
	}
	if s.emb != nil {
		if err := s.queueBacklog(ctx); err != nil {
			s.log.Warn("could not queue the embedding of items without vectors", "err", err)
		}
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Lock()
	s.started, s.stopBackground = true, stop
	s.mu.Unlock()
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		t := time.NewTimer(s.cfg.BlobSweepDelay)
		defer t.Stop()
		select {
		case <-bg.Done():
			return
		case <-t.C:
		}
		s.collectBlobs(bg)
	}()
	return nil
}

// Close stops working jobs: running ones get Config.StopTimeout to finish,
// then are cancelled, their items left indexing until their jobs run again.
func (s *Service) Close() error {
	s.engine.Close() // background graph builds
	s.mu.Lock()
	started, stop := s.started, s.stopBackground
	s.started = false
	s.mu.Unlock()
	if !started {
		return nil
	}
	stop()
	s.background.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StopTimeout)
	defer cancel()
	err := s.st.StopIngest(ctx)
	if s.batcher != nil {
		s.batcher.stop()
	}
	return err
}

// collectBlobs removes the blobs no item holds, left by a process that
// stopped between writing a blob and its item's row (or removing a row and
// its blob). Start runs it in the background, Config.BlobSweepDelay after
// it, so a server with many blobs (one lookup each) answers at once: a
// hash found unused is checked again under blobMu before its blob goes
// (removeBlobs), so an upload placing the same bytes meanwhile keeps it.
func (s *Service) collectBlobs(ctx context.Context) {
	var unused []string
	err := s.blobs.each(func(h string) {
		if ctx.Err() != nil {
			return
		}
		if used, err := s.st.HashInUse(ctx, h); err == nil && !used {
			unused = append(unused, h)
		}
	})
	if err != nil {
		s.log.Warn("blob clean-up failed", "err", err)
	}
	if ctx.Err() == nil && len(unused) > 0 {
		s.removeBlobs(ctx, unused...)
		s.log.Info("removed blobs no item holds", "blobs", len(unused))
	}
}

// removeBlobs deletes the blobs of hashes no item holds any more.
func (s *Service) removeBlobs(ctx context.Context, hashes ...string) {
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	for _, h := range hashes {
		if used, err := s.st.HashInUse(ctx, h); err == nil && !used {
			if err := s.blobs.remove(h); err != nil {
				s.log.Warn("remove blob", "hash", h, "err", err)
			}
		}
	}
}

// ---------------------------------------------------------------- capsules

// CreateCapsule creates a capsule (409 when the name is taken).
func (s *Service) CreateCapsule(ctx context.Context, name, description string) (domain.Capsule, error) {
	if err := domain.ValidateCapsuleName(name); err != nil {
		return domain.Capsule{}, err
	}
	c := domain.Capsule{Name: name, Description: description, CreatedAt: s.cfg.Now().UTC().Truncate(time.Millisecond)}
	if err := s.st.CreateCapsule(ctx, c); err != nil {
		if errors.Is(err, domain.ErrConflict) {
			return domain.Capsule{}, &domain.Error{Kind: domain.KindConflict, Code: "capsule_exists", Param: "name",
				Message: fmt.Sprintf("capsule %q already exists", name)}
		}
		return domain.Capsule{}, err
	}
	return c, nil
}

// GetCapsule returns a capsule with its counts.
func (s *Service) GetCapsule(ctx context.Context, name string) (domain.Capsule, error) {
	c, err := s.st.GetCapsule(ctx, name)
	return c, notFound(err, "capsule", name)
}

// ListCapsules lists every capsule by name.
func (s *Service) ListCapsules(ctx context.Context) ([]domain.Capsule, error) {
	return s.st.ListCapsules(ctx)
}

// DeleteCapsule deletes a capsule with its items, chunks and files.
func (s *Service) DeleteCapsule(ctx context.Context, name string) error {
	hashes, err := s.st.DeleteCapsule(ctx, name)
	if err != nil {
		return notFound(err, "capsule", name)
	}
	s.engine.CapsuleRemoved(name)
	s.removeBlobs(ctx, hashes...)
	return nil
}

func notFound(err error, what, id string) error {
	if errors.Is(err, domain.ErrNotFound) {
		return domain.NotFound(what, id)
	}
	return err
}

// ---------------------------------------------------------------- items

// NewItem is an item to add: a text (Text) or a file (File).
type NewItem struct {
	Kind domain.ItemKind
	// Text is the content of a text item.
	Text string
	// File is a file item's content, from StageFile. AddItem takes it over
	// (the caller may still Discard it: that is then a no-op).
	File     *Upload
	FileName string
	// FileType is the MIME type given by the client; sniffed when empty or
	// application/octet-stream.
	FileType     string
	URI          string
	TimeAuthored *time.Time
	Metadata     map[string]any
}

// AddItem stores an item and queues it for ingestion. created is false when
// the capsule already had an item with the URI, which is then updated (or left
// as it is when the content is the same).
func (s *Service) AddItem(ctx context.Context, capsule string, in NewItem) (domain.Item, bool, error) {
	if err := s.hasCapsule(ctx, capsule); err != nil {
		return domain.Item{}, false, err
	}
	// Fields left out (nil) keep an unchanged item's values (identity.go).
	metaSent, timeSent := in.Metadata != nil, in.TimeAuthored != nil
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	in.URI = normalizeURI(in.URI)
	up := in.File
	switch in.Kind {
	case domain.ItemText:
		if strings.TrimSpace(in.Text) == "" {
			return domain.Item{}, false, domain.Invalid("content", "content must not be empty")
		}
		var err error
		if up, err = s.blobs.stage(strings.NewReader(in.Text)); err != nil {
			return domain.Item{}, false, err
		}
	case domain.ItemFile:
		if up == nil || up.path == "" {
			return domain.Item{}, false, domain.Invalid("file", "a file is required")
		}
	default:
		return domain.Item{}, false, domain.Invalid("kind", "unknown item kind %q", in.Kind)
	}
	defer up.Discard()
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	if err := s.blobs.place(up); err != nil {
		return domain.Item{}, false, err
	}
	hash, size := up.hash, up.size
	var err error
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	it := domain.Item{
		ID: newItemID(now), Capsule: capsule, Kind: in.Kind, URI: in.URI, Size: size, ContentHash: hash,
		Metadata: in.Metadata, TimeAdded: now, TimeAuthored: in.TimeAuthored, TimeUpdated: now, Status: domain.StatusQueued,
	}
	if in.Kind == domain.ItemFile {
		it.FileName = in.FileName
		it.FileType, err = s.fileType(hash, in.FileName, in.FileType)
		if err != nil {
			return domain.Item{}, false, err
		}
		if it.URI == "" {
			it.URI = "file:" + in.FileName
		}
		it.Metadata, it.TimeAuthored = withFileMetadata(in.Metadata, in.TimeAuthored, s.fileMetadata(ctx, hash, it.FileType))
	} else if it.URI == "" {
		it.URI = "sha256:" + hash
	}
	prev, err := s.st.FindItem(ctx, capsule, it.URI, it.Kind, it.FileType, hash)
	switch {
	case err == nil && prev.ContentHash == hash:
		// The same bytes: that item, whatever URI this request names, and
		// a no-op but for the fields it sends.
		it.URI = prev.URI
		if !metaSent {
			it.Metadata = prev.Metadata
		}
		if !timeSent {
			it.TimeAuthored = prev.TimeAuthored
		}
	case err != nil && !errors.Is(err, domain.ErrNotFound):
		s.dropUnusedBlob(ctx, hash)
		return domain.Item{}, false, notFound(err, "capsule", capsule)
	}
	stored, created, err := s.st.PutItem(ctx, it)
	if err != nil {
		s.dropUnusedBlob(ctx, hash)
		return domain.Item{}, false, notFound(err, "capsule", capsule)
	}
	if stored.Status == domain.StatusReady {
		s.engine.ItemUpdated(stored)
	}
	return stored, created, nil
}

// dropUnusedBlob removes a blob just placed for an item that was not
// stored, unless an item holds it. The caller holds blobMu.
func (s *Service) dropUnusedBlob(ctx context.Context, hash string) {
	if used, err := s.st.HashInUse(ctx, hash); err == nil && !used {
		_ = s.blobs.remove(hash)
	}
}

// StageFile streams a file upload into the data directory; pass it to
// AddItem as NewItem.File, or Discard it. Errors of r (such as an upload
// limit) are returned as they are.
func (s *Service) StageFile(r io.Reader) (*Upload, error) { return s.blobs.stage(r) }

// fileType resolves a file's MIME type from what the client gave and the
// blob's first bytes.
func (s *Service) fileType(hash, name, given string) (string, error) {
	f, err := s.blobs.open(hash)
	if err != nil {
		return "", fmt.Errorf("open blob: %w", err)
	}
	defer f.Close()
	head := make([]byte, 8192)
	n, _ := io.ReadFull(f, head)
	return detect.ResolveType(name, given, head[:n]), nil
}

// fileMetadata reads what a file says about itself (see
// parse.ReadMetadata). A file whose metadata cannot be read has none: its
// text may still be readable, and ingestion reports what is not.
func (s *Service) fileMetadata(ctx context.Context, hash, fileType string) ingest.Metadata {
	f, err := s.blobs.open(hash)
	if err != nil {
		return ingest.Metadata{}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ingest.Metadata{}
	}
	m, err := parse.ReadMetadata(ctx, f, st.Size(), fileType)
	if err != nil {
		s.log.Debug("file metadata unreadable", "type", fileType, "err", err)
	}
	return m
}

// withFileMetadata merges a file's own metadata under what the client sent:
// the client's metadata fields and time_authored win, the file's title,
// author, date, description and keywords fill the fields it left out, and
// the file's date is the time authored when the client gave none.
func withFileMetadata(sent map[string]any, sentAuthored *time.Time, file ingest.Metadata) (map[string]any, *time.Time) {
	out := make(map[string]any, len(sent)+5)
	for k, v := range file.Fields() {
		out[k] = v
	}
	for k, v := range sent {
		out[k] = v
	}
	if sentAuthored == nil && !file.Date.IsZero() {
		d := file.Date.UTC().Truncate(time.Millisecond)
		sentAuthored = &d
	}
	return out, sentAuthored
}

// GetItem returns an item of a capsule.
func (s *Service) GetItem(ctx context.Context, capsule, id string) (domain.Item, error) {
	it, err := s.st.GetItem(ctx, capsule, id)
	return it, s.itemErr(ctx, err, capsule, id)
}

// itemErr turns ErrNotFound into the 404 of the capsule or of the item.
func (s *Service) itemErr(ctx context.Context, err error, capsule, id string) error {
	if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if ok, cerr := s.st.HasCapsule(ctx, capsule); cerr == nil && !ok {
		return domain.NotFound("capsule", capsule)
	}
	return domain.NotFound("item", id)
}

// ListItems returns one page of a capsule's items, newest first, and the
// cursor of the next page ("" at the end).
func (s *Service) ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) ([]domain.Item, string, error) {
	if limit <= 0 {
		limit = 100
	}
	items, err := s.st.ListItems(ctx, capsule, status, after, limit+1)
	if err != nil {
		return nil, "", notFound(err, "capsule", capsule)
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		next = items[limit-1].ID
	}
	return items, next, nil
}

// DeleteItem deletes an item with its chunks and file.
func (s *Service) DeleteItem(ctx context.Context, capsule, id string) error {
	it, err := s.st.DeleteItem(ctx, capsule, id)
	if err != nil {
		return s.itemErr(ctx, err, capsule, id)
	}
	s.engine.ItemRemoved(capsule, id)
	s.removeBlobs(ctx, it.ContentHash)
	s.notify()
	return nil
}

// ReindexItem queues an item for ingestion again.
func (s *Service) ReindexItem(ctx context.Context, capsule, id string) (domain.Item, error) {
	it, err := s.st.RequeueItem(ctx, capsule, id, s.cfg.Now().UTC())
	if err != nil {
		return domain.Item{}, s.itemErr(ctx, err, capsule, id)
	}
	return it, nil
}

// ItemText returns an item with its extracted text (409 until it has been
// indexed).
func (s *Service) ItemText(ctx context.Context, capsule, id string) (domain.Item, string, error) {
	it, err := s.GetItem(ctx, capsule, id)
	if err != nil {
		return domain.Item{}, "", err
	}
	text, err := s.st.ItemText(ctx, capsule, id)
	if errors.Is(err, domain.ErrConflict) {
		return domain.Item{}, "", &domain.Error{Kind: domain.KindConflict, Code: "item_not_indexed",
			Message: fmt.Sprintf("item %s has no text yet (status %s)", id, it.Status)}
	}
	if err != nil {
		return domain.Item{}, "", s.itemErr(ctx, err, capsule, id)
	}
	return it, text, nil
}

// waitPoll is how often WaitItem looks at the item when this process hears
// of no change: another process sharing the store may be ingesting it.
const waitPoll = 250 * time.Millisecond

// WaitItem waits until an item is ready or failed, the timeout passes or ctx
// ends, and returns the item as it then is.
func (s *Service) WaitItem(ctx context.Context, capsule, id string, timeout time.Duration) (domain.Item, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(waitPoll)
	defer poll.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		it, err := s.GetItem(ctx, capsule, id)
		if err != nil || it.Status == domain.StatusReady || it.Status == domain.StatusFailed {
			return it, err
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-deadline.C:
			return it, nil
		case <-ctx.Done():
			return it, ctx.Err()
		}
	}
}

// notify wakes the waiters of WaitItem (and drops the counted
// VectorStatus: an item changed).
func (s *Service) notify() {
	s.statusMu.Lock()
	s.statusAt = time.Time{}
	s.statusMu.Unlock()
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// ---------------------------------------------------------------- query

// Query searches a capsule.
func (s *Service) Query(ctx context.Context, capsule string, q domain.Query) ([]domain.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, domain.Invalid("query", "the query must not be empty")
	}
	if len(q.Text) > domain.MaxQueryBytes || !utf8.ValidString(q.Text) {
		return nil, domain.Invalid("query", "the query must be valid UTF-8 of at most %d bytes", domain.MaxQueryBytes)
	}
	if q.Limit == 0 {
		q.Limit = domain.DefaultQueryLimit
	}
	if q.Limit < 0 || q.Limit > domain.MaxQueryLimit {
		return nil, domain.Invalid("limit", "limit must be between 1 and %d", domain.MaxQueryLimit)
	}
	if err := s.hasCapsule(ctx, capsule); err != nil {
		return nil, err
	}
	return s.engine.Search(ctx, capsule, q)
}

// hasCapsule is nil when the capsule exists, its 404 when not.
func (s *Service) hasCapsule(ctx context.Context, capsule string) error {
	ok, err := s.st.HasCapsule(ctx, capsule)
	if err != nil {
		return fmt.Errorf("capsule %s: %w", capsule, err)
	}
	if !ok {
		return domain.NotFound("capsule", capsule)
	}
	return nil
}

// ---------------------------------------------------------------- helpers

// newItemID is itm_ followed by 12 hex digits of Unix milliseconds and 16
// random hex digits: ids sort by creation time.
func newItemID(t time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("itm_%012x%s", t.UnixMilli(), hex.EncodeToString(b[:]))
}

// approxTokens counts about 4/3 tokens a word when no tokenizer is known.
type approxTokens struct{}

func (approxTokens) CountTokens(text string) int {
	n := 0
	inWord := false
	for _, r := range text {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	return (n*4 + 2) / 3
}

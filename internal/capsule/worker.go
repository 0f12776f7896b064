package capsule

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/ingest/chunk"
	"capsuled/internal/ingest/parse"
)

// Bounds on one item's ingestion, so that no upload (a CSV of 200,000
// columns, a huge text) holds a worker for long.
const (
	DefaultJobTimeout       = 10 * time.Minute
	DefaultMaxChunksPerItem = 20000
)

// ingestItem is one ingestion job's work, the per-item step: it moves the
// item to indexing, extracts, chunks and embeds its content and completes
// or fails it. The store's guards settle races: a job for content the item
// no longer holds, or for an item gone or done, finds nothing to do, and an
// item updated, requeued or deleted while the job worked keeps its newer
// state. A nil error finishes the job; an error (the database, or the
// process stopping) has it run again.
func (s *Service) ingestItem(ctx context.Context, itemID, hash string) error {
	it, err := s.st.StartItem(ctx, itemID, hash, s.cfg.Now().UTC())
	if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrConflict) {
		return nil // deleted, or new content with its own job, or done
	}
	if err != nil {
		return fmt.Errorf("start item %s: %w", itemID, err)
	}
	p := prepared{it: it}
	start := time.Now()
	jctx, cancel := context.WithTimeout(ctx, s.cfg.JobTimeout)
	defer cancel()
	p.text, p.chunks, p.err = s.prepare(jctx, it)
	if p.err == nil && len(p.chunks) > s.cfg.MaxChunksPerItem {
		p.err = &domain.Error{Kind: domain.KindUnprocessable, Code: "too_many_chunks",
			Message: fmt.Sprintf("the item yields %d chunks, more than the limit of %d per item; split it", len(p.chunks), s.cfg.MaxChunksPerItem)}
	}
	if p.err == nil && s.emb != nil && len(p.chunks) > 0 {
		p.err = s.embedChunks(jctx, p.chunks)
	}
	if ctx.Err() != nil {
		// Stopping: the item stays indexing and the job runs again.
		return ctx.Err()
	}
	if jctx.Err() != nil {
		p.err = &domain.Error{Kind: domain.KindUnprocessable, Code: "ingestion_timeout",
			Message: fmt.Sprintf("ingesting the item took longer than the limit of %s", s.cfg.JobTimeout)}
	}
	err = s.finish(ctx, p, time.Since(start))
	s.notify()
	return err
}

// prepared is one item after extraction, chunking and embedding.
type prepared struct {
	it     domain.Item
	text   string
	chunks []domain.Chunk
	err    error
}

// finish writes one item's outcome; it returns only the errors that
// deserve another try (the store's), not the item's own.
func (s *Service) finish(ctx context.Context, p prepared, took time.Duration) error {
	now := s.cfg.Now().UTC()
	it := p.it
	if p.err != nil {
		reason := failureReason(p.err)
		failed, ferr := s.st.FailItem(ctx, it.ID, it.ContentHash, reason, now)
		switch {
		case ferr == nil:
			s.engine.ItemRemoved(failed.Capsule, failed.ID)
			s.counts.failed(took)
			s.log.Info("item failed", "capsule", it.Capsule, "item", it.ID, "reason", reason)
		case errors.Is(ferr, domain.ErrConflict):
		default:
			return fmt.Errorf("mark item %s failed: %w", it.ID, ferr)
		}
		return nil
	}
	done, err := s.st.CompleteItem(ctx, it.ID, it.ContentHash, p.text, p.chunks, now)
	switch {
	case errors.Is(err, domain.ErrConflict):
		// Updated, requeued or deleted while we worked: the newer state wins.
	case err != nil:
		return fmt.Errorf("index item %s: %w", it.ID, err)
	default:
		s.engine.ItemIndexed(done, p.chunks)
		s.counts.indexed(len(p.chunks), took)
		s.log.Debug("item ready", "capsule", it.Capsule, "item", it.ID, "chunks", len(p.chunks))
	}
	return nil
}

// failureReason is the readable reason shown on a failed item.
func failureReason(err error) string {
	if e, ok := domain.AsError(err); ok {
		return e.Message
	}
	return err.Error()
}

// prepare returns an item's clean text and its chunks (not yet embedded).
func (s *Service) prepare(ctx context.Context, it domain.Item) (string, []domain.Chunk, error) {
	f, err := s.blobs.open(it.ContentHash)
	if err != nil {
		return "", nil, fmt.Errorf("the item's content is missing from the data directory: %w", err)
	}
	defer f.Close()
	name, mime := it.FileName, it.FileType
	if it.Kind == domain.ItemText {
		name, mime = "", "text/plain"
	}
	doc, err := parse.Extract(ctx, f, name, mime, s.cfg.MaxExtractBytes)
	if err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(doc.Text) == "" {
		return "", nil, errors.New("no text could be extracted from the item")
	}
	pieces := chunk.Split(doc, s.tokens, s.chunk)
	chunks := make([]domain.Chunk, len(pieces))
	for i, p := range pieces {
		chunks[i] = domain.Chunk{ItemID: it.ID, Idx: p.Idx, Text: p.Text, Start: p.Start, End: p.End, Tokens: p.Tokens}
	}
	return doc.Text, chunks, nil
}

// embedChunks sets the chunks' vectors, from the cache where it has them.
// Its embedder calls go through the batcher, which joins the calls of
// concurrent jobs into full batches.
func (s *Service) embedChunks(ctx context.Context, chunks []domain.Chunk) error {
	model := s.emb.ModelID()
	hashes := make([][32]byte, len(chunks))
	for i, c := range chunks {
		hashes[i] = sha256.Sum256([]byte(c.Text))
	}
	cached, err := s.st.CachedVectors(ctx, model, hashes)
	if err != nil {
		return err
	}
	var todo []int
	for i := range chunks {
		if v, ok := cached[hashes[i]]; ok && len(v) == s.emb.Dim() {
			chunks[i].Vector = v
		} else {
			todo = append(todo, i)
		}
	}
	fresh := map[[32]byte][]float32{}
	for start := 0; start < len(todo); start += s.cfg.EmbedBatch {
		batch := todo[start:min(start+s.cfg.EmbedBatch, len(todo))]
		texts := make([]string, len(batch))
		for j, i := range batch {
			texts[j] = chunks[i].Text
		}
		vecs, err := s.batcher.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embedding failed: %w", err)
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("embedding failed: %d vectors for %d texts", len(vecs), len(texts))
		}
		for j, i := range batch {
			chunks[i].Vector = vecs[j]
			fresh[hashes[i]] = vecs[j]
		}
	}
	return s.st.CacheVectors(ctx, model, fresh)
}

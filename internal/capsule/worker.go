package capsule

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/ingest"
)

// idlePoll is how often an idle worker looks for queued items without being
// poked (items queued by another process or left by a failed claim).
const idlePoll = 2 * time.Second

// claimBatch is the most items a worker takes at once: their chunks are
// embedded together, so that small items still fill the embedder's batches.
const claimBatch = 32

// work claims and ingests queued items until ctx ends.
func (s *Service) work(ctx context.Context) {
	for ctx.Err() == nil {
		var batch []domain.Item
		for len(batch) < claimBatch {
			it, err := s.st.ClaimItem(ctx, s.cfg.Now().UTC())
			if err != nil {
				if !errors.Is(err, domain.ErrNotFound) && ctx.Err() == nil {
					s.log.Error("claim item", "err", err)
				}
				break
			}
			batch = append(batch, it)
		}
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			case <-time.After(idlePoll):
			}
			continue
		}
		s.ingest(ctx, batch)
	}
}

// prepared is one claimed item after extraction and chunking.
type prepared struct {
	it     domain.Item
	text   string
	chunks []domain.Chunk
	err    error
}

// ingest extracts and chunks a batch of claimed items, embeds all their
// chunks together and indexes each item in its own transaction.
func (s *Service) ingest(ctx context.Context, items []domain.Item) {
	ps := make([]prepared, len(items))
	var all []domain.Chunk
	for i, it := range items {
		ps[i].it = it
		ps[i].text, ps[i].chunks, ps[i].err = s.prepare(ctx, it)
		if ps[i].err == nil {
			all = append(all, ps[i].chunks...)
		}
	}
	if s.emb != nil && len(all) > 0 {
		err := s.embedChunks(ctx, all)
		off := 0
		for i := range ps {
			if ps[i].err != nil {
				continue
			}
			if err != nil {
				ps[i].err = err
				continue
			}
			for j := range ps[i].chunks {
				ps[i].chunks[j].Vector = all[off+j].Vector
			}
			off += len(ps[i].chunks)
		}
	}
	if ctx.Err() != nil {
		return // shutting down: the items stay indexing and are requeued at start
	}
	for _, p := range ps {
		s.finish(ctx, p)
	}
	s.notify()
}

// finish writes one item's outcome.
func (s *Service) finish(ctx context.Context, p prepared) {
	now := s.cfg.Now().UTC()
	it := p.it
	if p.err != nil {
		reason := failureReason(p.err)
		failed, ferr := s.st.FailItem(ctx, it.ID, it.ContentHash, reason, now)
		if ferr == nil {
			s.engine.ItemRemoved(failed.Capsule, failed.ID)
			s.log.Info("item failed", "capsule", it.Capsule, "item", it.ID, "reason", reason)
		} else if !errors.Is(ferr, domain.ErrConflict) {
			s.log.Error("mark item failed", "item", it.ID, "err", ferr)
		}
		return
	}
	done, err := s.st.CompleteItem(ctx, it.ID, it.ContentHash, p.text, p.chunks, now)
	switch {
	case errors.Is(err, domain.ErrConflict):
		// Updated, requeued or deleted while we worked: the newer state wins.
	case err != nil:
		s.log.Error("index item", "item", it.ID, "err", err)
	default:
		s.engine.ItemIndexed(done, p.chunks)
		s.log.Debug("item ready", "capsule", it.Capsule, "item", it.ID, "chunks", len(p.chunks))
	}
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
	doc, err := ingest.Extract(ctx, f, name, mime, s.cfg.MaxExtractBytes)
	if err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(doc.Text) == "" {
		return "", nil, errors.New("no text could be extracted from the item")
	}
	pieces := ingest.ChunkDocument(doc, s.tokens, s.chunk)
	chunks := make([]domain.Chunk, len(pieces))
	for i, p := range pieces {
		chunks[i] = domain.Chunk{ItemID: it.ID, Idx: p.Idx, Text: p.Text, Start: p.Start, End: p.End, Tokens: p.Tokens}
	}
	return doc.Text, chunks, nil
}

// embedChunks sets the chunks' vectors, from the cache where it has them.
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
		vecs, err := s.emb.Embed(ctx, texts)
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

package capsule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"capsuled/internal/domain"
)

// Vectors and the embedding model (docs/ingestion.md, "Vectors and the
// embedding model"): the store records the model (id and width) that made
// its chunk vectors. A process with an embedding model adopts the record
// when there is none, and refuses to start when it names another model
// (ModelChangedError): vectors of two models are never mixed. Searchable
// chunks without a vector (ingested while no model was configured, or whose
// vectors a change of model removed) get one from a durable background job
// (the store's EnqueueEmbed) that any process with the model works, or at
// once from Reindex (capsuled reindex), which is also how the store moves
// to another model.

// ModelChangedError is Start's error when the store's vectors were made by
// another embedding model than the configured one.
type ModelChangedError struct {
	Stored, Configured domain.EmbeddingSpace
}

func (e *ModelChangedError) Error() string {
	return fmt.Sprintf("the store's vectors were made by the embedding model %s, but this process is configured with %s; "+
		"vectors of two models are never mixed: start with %[1]s, or run capsuled reindex with this store and the new model "+
		"to replace every vector with one of %[2]s", e.Stored, e.Configured)
}

// embedPage is how many items the embedding of missing vectors reads at a
// time; embedSlice bounds one run of its job (which then runs again), well
// within the job lease.
const (
	embedPage  = 16
	embedSlice = time.Minute
)

// space is the configured embedder's space (zero without one).
func (s *Service) space() domain.EmbeddingSpace {
	if s.emb == nil {
		return domain.EmbeddingSpace{}
	}
	return domain.EmbeddingSpace{Model: s.emb.ModelID(), Dimensions: s.emb.Dim()}
}

// checkSpace adopts the configured model when the store records none, and
// fails with ModelChangedError when it records another.
func (s *Service) checkSpace(ctx context.Context) error {
	cur := s.space()
	stored, err := s.st.EmbeddingSpace(ctx)
	if err != nil {
		return err
	}
	switch {
	case stored == cur:
		return nil
	case stored.Model != "":
		return &ModelChangedError{Stored: stored, Configured: cur}
	}
	removed, err := s.st.UseEmbeddingSpace(ctx, cur, s.cfg.Now().UTC())
	if err != nil {
		return err
	}
	s.log.Info("embedding model recorded for the store's vectors", "model", cur.Model, "dim", cur.Dimensions,
		"vectors_of_another_width_removed", removed)
	return nil
}

// queueBacklog starts the job that embeds the chunks without a vector, if
// there are any.
func (s *Service) queueBacklog(ctx context.Context) error {
	items, chunks, err := s.st.VectorBacklog(ctx)
	if err != nil || items == 0 {
		return err
	}
	s.log.Info("searchable items without vectors: embedding them in the background", "items", items, "chunks", chunks)
	return s.st.EnqueueEmbed(ctx)
}

// embedBacklog is the work of the embed job: it embeds the chunks without
// a vector, item by item, for up to embedSlice, and says whether some
// remain.
func (s *Service) embedBacklog(ctx context.Context) (bool, error) {
	if s.emb == nil {
		return false, errors.New("no embedding model in this process")
	}
	start := s.cfg.Now()
	lastLog := start
	done := 0
	after := ""
	for {
		page, err := s.st.ItemsWithoutVectors(ctx, after, embedPage)
		if err != nil {
			return false, err
		}
		if len(page) == 0 {
			if done > 0 {
				s.log.Info("every searchable item has its vectors", "items_embedded", done)
			}
			return false, nil
		}
		n, err := s.embedItems(ctx, page)
		if err != nil {
			return false, err
		}
		done += n
		after = page[len(page)-1].ID
		if now := s.cfg.Now(); now.Sub(lastLog) >= 5*time.Second {
			lastLog = now
			if items, chunks, err := s.st.VectorBacklog(ctx); err == nil {
				s.log.Info("embedding items without vectors", "items_embedded", done, "items_left", items, "chunks_left", chunks)
			}
		}
		if s.cfg.Now().Sub(start) >= embedSlice {
			return true, nil
		}
	}
}

// embedItems gives the items' chunks without a vector their vectors (the
// embedder called in batches across items) and returns how many items got
// them; an item that changed meanwhile is left to its own ingestion.
func (s *Service) embedItems(ctx context.Context, items []domain.Item) (int, error) {
	all := make([][]domain.Chunk, len(items))
	var todo []domain.Chunk
	type at struct{ item, chunk int }
	var where []at
	for i, it := range items {
		chunks, err := s.st.ItemChunks(ctx, it.ID)
		if err != nil {
			return 0, err
		}
		all[i] = chunks
		for j, c := range chunks {
			if c.Vector == nil || len(c.Vector) != s.emb.Dim() {
				chunks[j].Vector = nil
				todo = append(todo, c)
				where = append(where, at{i, j})
			}
		}
	}
	if len(todo) > 0 {
		if err := s.embedChunks(ctx, todo); err != nil {
			return 0, err
		}
	}
	for k, w := range where {
		all[w.item][w.chunk].Vector = todo[k].Vector
	}
	n := 0
	for i, it := range items {
		done, err := s.st.SetChunkVectors(ctx, it.ID, it.ContentHash, all[i])
		switch {
		case errors.Is(err, domain.ErrConflict) || errors.Is(err, domain.ErrNotFound):
			continue
		case err != nil:
			return n, err
		}
		s.engine.ItemIndexed(done, all[i])
		n++
	}
	s.notify()
	return n, nil
}

// VectorStatus is where the store's vectors stand.
type VectorStatus struct {
	// Semantic reports an embedding model in this process; Space is its
	// model, Stored the one recorded for the store's vectors.
	Semantic      bool
	Space, Stored domain.EmbeddingSpace
	// ItemsWithout and ChunksWithout count the searchable items with
	// chunks without a vector, and those chunks: the backlog of the
	// background job (or of capsuled reindex without a model here).
	ItemsWithout, ChunksWithout int
}

// vectorStatusTTL is how long VectorStatus reuses its last count: readiness
// probes ask often, and on a store without a model every chunk is counted.
const vectorStatusTTL = 2 * time.Second

// VectorStatus reports the embedding model and the chunks still without
// a vector (counted at most every vectorStatusTTL).
func (s *Service) VectorStatus(ctx context.Context) (VectorStatus, error) {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	now := time.Now()
	if !s.statusAt.IsZero() && now.Sub(s.statusAt) < vectorStatusTTL {
		return s.status, nil
	}
	st := VectorStatus{Semantic: s.emb != nil, Space: s.space()}
	var err error
	if st.Stored, err = s.st.EmbeddingSpace(ctx); err != nil {
		return st, err
	}
	if st.ItemsWithout, st.ChunksWithout, err = s.st.VectorBacklog(ctx); err != nil {
		return st, err
	}
	s.status, s.statusAt = st, now
	return st, nil
}

// ReindexResult is what Reindex did.
type ReindexResult struct {
	// From is the model recorded before (zero: none), To the configured
	// one; Removed counts the vectors a change of model removed.
	From, To domain.EmbeddingSpace
	Removed  int
	// Items and Chunks count what was embedded.
	Items, Chunks int
}

// Reindex gives every searchable chunk a vector of the configured model,
// now: when the store records another model it first removes every vector
// (in the transaction that records the new model), then embeds the chunks
// without a vector, calling progress after each page of items with the
// items done and the total. Items waiting for ingestion get their vectors
// from their ingestion jobs.
func (s *Service) Reindex(ctx context.Context, progress func(done, total int)) (ReindexResult, error) {
	if s.emb == nil {
		return ReindexResult{}, &domain.Error{Kind: domain.KindUnprocessable, Code: "semantic_search_off",
			Message: "reindex needs an embedding model, and none is configured"}
	}
	r := ReindexResult{To: s.space()}
	var err error
	if r.From, err = s.st.EmbeddingSpace(ctx); err != nil {
		return r, err
	}
	if r.From != r.To {
		if r.Removed, err = s.st.UseEmbeddingSpace(ctx, r.To, s.cfg.Now().UTC()); err != nil {
			return r, err
		}
		if r.From.Model != "" {
			s.log.Info("embedding model changed: vectors of the old model removed", "from", r.From.String(), "to", r.To.String(), "removed", r.Removed)
		}
	}
	total, chunks, err := s.st.VectorBacklog(ctx)
	if err != nil {
		return r, err
	}
	r.Chunks = chunks
	if progress != nil {
		progress(0, total)
	}
	after := ""
	for {
		page, err := s.st.ItemsWithoutVectors(ctx, after, embedPage)
		if err != nil {
			return r, err
		}
		if len(page) == 0 {
			return r, nil
		}
		n, err := s.embedItems(ctx, page)
		r.Items += n
		if err != nil {
			return r, err
		}
		after = page[len(page)-1].ID
		if progress != nil {
			progress(min(r.Items, total), total)
		}
	}
}

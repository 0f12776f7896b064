// Package rerank scores documents against a query with an upstream
// reranking model over the Cohere/Jina rerank protocol (POST …/rerank with
// {"model", "query", "documents", "top_n"}; reply {"results": [{"index",
// "relevance_score"}]}), as vLLM serves it for cross-encoder models
// (`vllm serve BAAI/bge-reranker-v2-m3`) and text-embeddings-inference's
// compatible route. Requests go through capsuled's one client of
// OpenAI-compatible servers (internal/oai), which maps the server's
// failures.
//
// The retrieval engine uses it, when configured, as an optional stage after
// fusion: it reorders the fused top candidates by the reranker's scores.
package rerank

import (
	"context"
	"errors"
	"fmt"
	"time"

	"capsuled/internal/oai"
)

// Config configures an HTTP reranker.
type Config struct {
	// URL is the server's base URL, ending in /v1 (…/rerank is appended).
	URL string
	// Model is the reranking model's name on the server. Required.
	Model string
	// Key, when set, is sent as a bearer token.
	Key string
	// Timeout bounds each call. Default 30s.
	Timeout time.Duration
}

// HTTP is a reranker behind an HTTP server.
type HTTP struct {
	client *oai.Client
	model  string
}

// New checks the configuration and returns the reranker.
func New(cfg Config) (*HTTP, error) {
	if cfg.Model == "" {
		return nil, errors.New("rerank: a model is required (--rerank-model)")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	c, err := oai.New(oai.Config{URL: cfg.URL, Key: cfg.Key, Timeout: cfg.Timeout, Name: "the rerank server"})
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	return &HTTP{client: c, model: cfg.Model}, nil
}

// Rerank returns one relevance score per document, in the documents'
// order. It asks for every document (top_n is their count), so a reply
// that leaves one out is an upstream_bad_reply.
func (h *HTTP) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	res, err := h.client.Rerank(ctx, h.model, query, docs)
	if err != nil {
		return nil, err
	}
	if len(res) != len(docs) {
		return nil, h.client.BadReply(fmt.Errorf("%d rerank results for %d documents", len(res), len(docs)))
	}
	scores := make([]float64, len(docs))
	for _, r := range res {
		scores[r.Index] = r.Score
	}
	return scores, nil
}

// Close releases idle connections.
func (h *HTTP) Close() error {
	h.client.Close()
	return nil
}

package oai

import (
	"context"
	"fmt"
)

// Embedding is one vector of an embeddings reply.
type Embedding struct {
	Index     *int      `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// Embeddings posts texts to /embeddings and returns the server's vectors
// as sent (the caller checks their order, count and dimension).
func (c *Client) Embeddings(ctx context.Context, model string, input []string) ([]Embedding, error) {
	var r struct {
		Data []Embedding `json:"data"`
	}
	body := map[string]any{"model": model, "input": input, "encoding_format": "float"}
	if err := c.PostJSON(ctx, "/embeddings", body, &r); err != nil {
		return nil, err
	}
	return r.Data, nil
}

// RerankResult is one scored document of a rerank reply.
type RerankResult struct {
	Index int     `json:"index"`
	Score float64 `json:"relevance_score"`
}

// Rerank posts a query and documents to /rerank (the Cohere and Jina
// protocol that vLLM and text-embeddings-inference's compatible route
// serve) and returns every document's relevance score, in the server's
// order.
func (c *Client) Rerank(ctx context.Context, model, query string, documents []string) ([]RerankResult, error) {
	var r struct {
		Results []RerankResult `json:"results"`
	}
	body := map[string]any{"model": model, "query": query, "documents": documents, "top_n": len(documents)}
	if err := c.PostJSON(ctx, "/rerank", body, &r); err != nil {
		return nil, err
	}
	seen := make(map[int]bool, len(r.Results))
	for _, res := range r.Results {
		if res.Index < 0 || res.Index >= len(documents) || seen[res.Index] {
			return nil, c.BadReply(fmt.Errorf("rerank result index %d out of range or repeated", res.Index))
		}
		seen[res.Index] = true
	}
	return r.Results, nil
}

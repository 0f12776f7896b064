package apiclient

import (
	"context"

	"capsuled/gen"
	"capsuled/internal/agent"
)

// Backend runs the agent loop's tools against a capsule's query API: search
// is the query in hybrid mode, text_search in keyword mode, read the item's
// text. Hits are one per item: the query asks for one chunk per item (its
// best), so that the limit counts items, as agent.CapsuleBackend's does and
// as a one-shot query for the top items does; a long document's many
// chunks do not crowd the others out of the loop's result lists.
type Backend struct {
	Client  *gen.ClientWithResponses
	Capsule string
}

func (b *Backend) query(ctx context.Context, q string, limit int, mode gen.WishlistMode) ([]agent.Hit, error) {
	limit = max(1, min(limit, 100))
	m, one := mode, 1
	resp, err := b.Client.QueryCapsuleWithResponse(ctx, b.Capsule, gen.QueryCapsuleJSONRequestBody{Query: q, Limit: &limit, Wishlist: &gen.Wishlist{Mode: &m, MaxChunksPerItem: &one}})
	if err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, Error(resp.StatusCode(), resp.Body)
	}
	var hits []agent.Hit
	seen := map[string]int{}
	for _, r := range *resp.JSON200 {
		if i, ok := seen[r.ItemId]; ok { // one hit per item: its chunks joined
			hits[i].Text += "\n" + r.Content
			continue
		}
		seen[r.ItemId] = len(hits)
		hits = append(hits, agent.Hit{ID: r.ItemId, Title: r.FileName, Text: r.Content, Score: float64(r.Score)})
	}
	return hits, nil
}

func (b *Backend) Search(ctx context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.query(ctx, q, limit, gen.Hybrid)
}

func (b *Backend) TextSearch(ctx context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.query(ctx, q, limit, gen.Keyword)
}

func (b *Backend) Read(ctx context.Context, id string) (string, error) {
	resp, err := b.Client.GetItemTextWithResponse(ctx, b.Capsule, id)
	if err != nil {
		return "", err
	}
	if resp.JSON200 == nil {
		return "", Error(resp.StatusCode(), resp.Body)
	}
	return resp.JSON200.Text, nil
}

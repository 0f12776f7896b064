package agent_test

import (
	"context"
	"strings"
	"testing"

	"capsuled/internal/agent"
	"capsuled/internal/domain"
)

// fakeCapsules is a capsule service FOR TESTS: it records the queries and
// answers from fixed hits.
type fakeCapsules struct {
	hits    map[domain.SearchMode][]domain.Hit
	texts   map[string]string
	queries []domain.Query
}

func (f *fakeCapsules) Query(_ context.Context, capsule string, q domain.Query) ([]domain.Hit, error) {
	if capsule != "docs" {
		return nil, &domain.Error{Kind: domain.KindNotFound, Message: "no capsule"}
	}
	f.queries = append(f.queries, q)
	h := f.hits[q.Wishlist.Mode]
	return h[:min(len(h), q.Limit)], nil
}

func (f *fakeCapsules) ItemText(_ context.Context, _, id string) (domain.Item, string, error) {
	t, ok := f.texts[id]
	if !ok {
		return domain.Item{}, "", &domain.Error{Kind: domain.KindNotFound, Message: "no item " + id}
	}
	return domain.Item{ID: id, URI: "uri:" + id}, t, nil
}

func TestCapsuleBackend(t *testing.T) {
	t.Parallel()
	hit := func(id string, idx int, score float64) domain.Hit {
		return domain.Hit{Item: domain.Item{ID: id}, Idx: idx, Content: id + " chunk", Score: score}
	}
	f := &fakeCapsules{
		hits: map[domain.SearchMode][]domain.Hit{
			domain.ModeHybrid:  {hit("a", 0, 0.9), hit("b", 2, 0.5)},
			domain.ModeKeyword: {hit("b", 3, 0.8), hit("a", 1, 0.4)},
		},
		texts: map[string]string{"a": "A.", "b": "B.", "c": strings.Repeat("long text ", 200)},
	}
	b := agent.NewCapsuleBackend(f, "docs")
	ctx := context.Background()
	if hits, err := b.Search(ctx, "q", 500); err != nil || len(hits) != 2 || hits[0].ID != "a" {
		t.Fatalf("search: %v %+v", err, hits)
	}
	if hits, err := b.TextSearch(ctx, "q", 0); err != nil || len(hits) != 1 || hits[0].ID != "b" {
		t.Fatalf("text_search: %v %+v", err, hits)
	}
	want := []domain.Query{
		{Text: "q", Limit: domain.MaxQueryLimit, Wishlist: domain.Wishlist{Mode: domain.ModeHybrid, MaxChunksPerItem: 1}},
		{Text: "q", Limit: 1, Wishlist: domain.Wishlist{Mode: domain.ModeKeyword, MaxChunksPerItem: 1}},
	}
	for i := range want {
		got := f.queries[i]
		if got.Text != want[i].Text || got.Limit != want[i].Limit || got.Wishlist.Mode != want[i].Wishlist.Mode || got.Wishlist.MaxChunksPerItem != 1 {
			t.Errorf("query %d = %+v, want %+v", i, got, want[i])
		}
	}
	if text, err := b.Read(ctx, "a"); err != nil || text != "A." {
		t.Fatalf("read: %q %v", text, err)
	}

	tests := []struct {
		id      string
		ok      bool
		idx     int
		score   float64
		content string
	}{
		{"a", true, 0, 0.9, "a chunk"}, // the best-scoring chunk seen
		{"b", true, 3, 0.8, "b chunk"},
		{"c", true, 0, 0, ""}, // only read: the start of its text
		{"zz", false, 0, 0, ""},
	}
	for _, tt := range tests {
		h, ok, err := b.Evidence(ctx, tt.id)
		if err != nil || ok != tt.ok {
			t.Fatalf("evidence %s: ok %v err %v", tt.id, ok, err)
		}
		if !ok {
			continue
		}
		if h.Item.ID != tt.id || h.Idx != tt.idx || h.Score != tt.score {
			t.Errorf("evidence %s = %+v", tt.id, h)
		}
		if tt.content != "" && h.Content != tt.content {
			t.Errorf("evidence %s content %q, want %q", tt.id, h.Content, tt.content)
		}
		if tt.content == "" && (len(h.Content) == 0 || len(h.Content) > agent.EvidenceChars) {
			t.Errorf("evidence %s: %d bytes, want 1..%d", tt.id, len(h.Content), agent.EvidenceChars)
		}
	}
}

// TestCapsuleBackendLoop runs the loop with a scripted model over the
// backend and checks the trace's result sizes.
func TestCapsuleBackendLoop(t *testing.T) {
	t.Parallel()
	f := &fakeCapsules{hits: map[domain.SearchMode][]domain.Hit{
		domain.ModeHybrid:  {{Item: domain.Item{ID: "a"}, Content: "Ada Lovelace wrote the first program.", Score: 0.9}},
		domain.ModeKeyword: {{Item: domain.Item{ID: "a"}, Content: "Ada Lovelace wrote the first program.", Score: 0.9}},
	}, texts: map[string]string{"a": "Ada Lovelace wrote the first program."}}
	m := agent.ModelFunc(func(_ context.Context, msgs []domain.Message) (domain.Choice, error) {
		if len(msgs) == 2 {
			return domain.Choice{FinishReason: "tool_calls", ToolCalls: []domain.ToolCall{{ID: "1", Type: "function", Name: "search", Arguments: `{"query":"first program","limit":5}`}}}, nil
		}
		return domain.Choice{FinishReason: "tool_calls", ToolCalls: []domain.ToolCall{{ID: "2", Type: "function", Name: "report_helpful_ids", Arguments: `{"ids":["a"]}`}}}, nil
	})
	res, err := agent.Run(context.Background(), m, agent.NewCapsuleBackend(f, "docs"), "who wrote the first program?", agent.Config{})
	if err != nil || !res.Reported || len(res.IDs) != 1 || res.IDs[0] != "a" {
		t.Fatalf("run: %v %+v", err, res)
	}
	c := res.Trace[0].ToolCalls[0]
	if c.ResultBytes < len("Ada Lovelace") || len(c.ResultIDs) != 1 {
		t.Errorf("trace call %+v", c)
	}
}

package rerank

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"capsuled/internal/domain"
)

// A fake rerank server (for the unit test of the client around it) that
// answers in reverse order: scores come back in the documents' order.
func TestRerankScoresInDocumentOrder(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Documents []string `json:"documents"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var out []map[string]any
		for i := len(req.Documents) - 1; i >= 0; i-- {
			out = append(out, map[string]any{"index": i, "relevance_score": float64(i) / 10})
		}
		if r.URL.Query().Get("short") != "" || len(req.Documents) == 3 {
			out = out[:1]
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"results": out})
	}))
	defer srv.Close()
	h, err := New(Config{URL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Rerank(context.Background(), "q", []string{"a", "b"})
	if err != nil || len(got) != 2 || got[0] != 0 || got[1] != 0.1 {
		t.Fatalf("%v %v", got, err)
	}
	// A reply that leaves a document out is a bad reply.
	_, err = h.Rerank(context.Background(), "q", []string{"a", "b", "c"})
	if de, ok := domain.AsError(err); !ok || de.Code != "upstream_bad_reply" {
		t.Fatalf("%v, want upstream_bad_reply", err)
	}
	if _, err := New(Config{URL: srv.URL}); err == nil {
		t.Fatal("a reranker without a model was accepted")
	}
}

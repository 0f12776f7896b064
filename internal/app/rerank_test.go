package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"capsuled/internal/app"
)

// fakeReranker is a fake rerank server (Cohere/Jina protocol, as vLLM
// serves it) for the test of capsuled's rerank stage around it: it is no
// model; it scores a document 0.9 when it mentions otters and 0.1 else, and
// records each request.
type fakeReranker struct {
	mu   sync.Mutex
	reqs []rerankRequest
}

type rerankRequest struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

func (f *fakeReranker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req rerankRequest
	if r.URL.Path != "/v1/rerank" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	type result struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	}
	var out []result
	for i, d := range req.Documents {
		s := 0.1
		if strings.Contains(strings.ToLower(d), "otter") {
			s = 0.9
		}
		out = append(out, result{i, s})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "rr", "results": out})
}

// TestRerankStage: with --rerank-url, a capsule query's fused candidates
// are sent to the rerank server with the query and reordered by its scores
// (the hit's score is the reranker's); without it the order is the fusion's.
func TestRerankStage(t *testing.T) {
	t.Parallel()
	fake := &fakeReranker{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	docs := []string{
		"Rivers and river animals: the river holds fish, and river animals feed on river fish.",
		"River animals of Europe include beavers and river fish.",
		"The otter is one of the playful animals.",
	}
	run := func(t *testing.T, cfg app.Config, wantQueryStatus int) []map[string]any {
		t.Helper()
		base, admin := serveWithAdmin(t, cfg)
		root := strings.TrimSuffix(base, "v1/")
		call := func(method, path string, body any, want ...int) []byte {
			t.Helper()
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(method, root+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			if (len(want) == 0 && resp.StatusCode >= 300) || (len(want) > 0 && resp.StatusCode != want[0]) {
				t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
			}
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				t.Fatalf("503 without Retry-After: %s", out)
			}
			return out
		}
		call("POST", "v1/capsules", map[string]any{"name": "animals"})
		for _, d := range docs {
			call("POST", "v1/capsules/animals/items?wait=true", map[string]any{"content": d})
		}
		out := call("POST", "capsules/animals/query", map[string]any{"query": "river animals", "limit": 2}, wantQueryStatus)
		var hits []map[string]any
		if wantQueryStatus == http.StatusOK {
			if err := json.Unmarshal(out, &hits); err != nil {
				t.Fatal(err)
			}
		}
		return hits
	}
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		hits := run(t, app.Config{Capsules: app.CapsulesConfig{Embedder: "off"}}, http.StatusOK)
		if len(hits) != 2 || strings.Contains(fmt.Sprint(hits[0]["content"]), "otter") {
			t.Fatalf("without rerank: %v", hits)
		}
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		hits := run(t, app.Config{Capsules: app.CapsulesConfig{Embedder: "off", RerankURL: srv.URL + "/v1", RerankModel: "fake-reranker", RerankDepth: 10}}, http.StatusOK)
		if len(hits) != 2 || !strings.Contains(fmt.Sprint(hits[0]["content"]), "otter") || hits[0]["score"] != 0.9 || hits[1]["score"] != 0.1 {
			t.Fatalf("with rerank: %v", hits)
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		if len(fake.reqs) != 1 {
			t.Fatalf("%d rerank requests, want 1", len(fake.reqs))
		}
		r := fake.reqs[0]
		if r.Model != "fake-reranker" || r.Query != "river animals" || len(r.Documents) != 3 || r.TopN != 3 {
			t.Fatalf("rerank request %+v: want the query and every fused candidate (3, fewer than the depth 10)", r)
		}
	})
	// A rerank server that cannot be reached: the query answers 503 with
	// Retry-After (internal/oai's table), never a 500.
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		run(t, app.Config{Capsules: app.CapsulesConfig{Embedder: "off", RerankURL: down.URL + "/v1", RerankModel: "m"}}, http.StatusServiceUnavailable)
	})
}

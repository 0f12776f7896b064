package openaihttp

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// fakeServer is a fake OpenAI-compatible embeddings server: it answers
// with deterministic pseudo-random vectors derived from each input's hash
// (not a model: similarity means nothing), or with the failure a test
// scripts through handler.
type fakeServer struct {
	*httptest.Server
	dim      int
	requests atomic.Int64
	maxBatch atomic.Int64
	lastAuth atomic.Value
}

func newFakeServer(t *testing.T, dim int, handler http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{dim: dim}
	if handler == nil {
		handler = f.embeddings
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		f.lastAuth.Store(r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body) // read to EOF so that a client hang-up cancels r.Context()
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler(w, r)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func fakeVector(text string, dim int) []float64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]float64, dim)
	for i := range v {
		v[i] = r.NormFloat64() * 3 // deliberately not unit length
	}
	return v
}

func (f *fakeServer) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	for {
		cur := f.maxBatch.Load()
		if int64(len(req.Input)) <= cur || f.maxBatch.CompareAndSwap(cur, int64(len(req.Input))) {
			break
		}
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	// answer in reverse order: clients must honour "index"
	for i := len(req.Input) - 1; i >= 0; i-- {
		resp.Data = append(resp.Data, item{"embedding", i, fakeVector(req.Input[i], f.dim)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

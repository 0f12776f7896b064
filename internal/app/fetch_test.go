package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestModelFetchFirstUse: with --model-fetch and no model on disk, auto
// downloads the ONNX export into the data directory (here from a local
// server standing in for the model's public home, serving the model that
// .ci/fetch-model.sh converted) and starts ONNX Runtime on it; the next start
// finds it on disk and downloads nothing.
func TestModelFetchFirstUse(t *testing.T) {
	t.Parallel()
	onnx := os.Getenv("CAPSULED_ONNX_DIR")
	if onnx == "" || !fileExists(filepath.Join(onnx, "model.onnx")) || os.Getenv("CAPSULED_ORT_LIB") == "" {
		t.Skip("no ONNX model and library (CAPSULED_ONNX_DIR, CAPSULED_ORT_LIB; run .ci/fetch-model.sh)")
	}
	var requests atomic.Int32
	files := map[string]string{
		"/onnx/model.onnx": "model.onnx", "/vocab.txt": "vocab.txt", "/config.json": "config.json", "/tokenizer.json": "tokenizer.json",
	}
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		name, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(onnx, name))
	}))
	t.Cleanup(home.Close)

	data := t.TempDir()
	cfg := CapsulesConfig{ModelFetch: true, ModelURL: home.URL}
	start := func() {
		t.Helper()
		a := &App{cfg: Config{DataDir: data}, log: slog.New(slog.DiscardHandler)}
		emb, tokens, closeFn, err := a.newEmbedder(context.Background(), cfg)
		if err != nil || emb == nil || tokens == nil {
			t.Fatalf("newEmbedder: %v %v %v", emb, tokens, err)
		}
		defer closeFn()
		if emb.Dim() != 384 {
			t.Fatalf("dim %d", emb.Dim())
		}
	}
	start()
	if requests.Load() == 0 || !fileExists(filepath.Join(data, "models", "all-MiniLM-L6-v2", "model.onnx")) {
		t.Fatalf("the model was not downloaded into the data directory (%d requests)", requests.Load())
	}
	before := requests.Load()
	start()
	if requests.Load() != before {
		t.Fatalf("a start with the model on disk downloaded %d more files", requests.Load()-before)
	}
}

// TestModelFetchUnreachable: when the download fails the server still
// starts, with semantic search off.
func TestModelFetchUnreachable(t *testing.T) {
	t.Parallel()
	a := &App{cfg: Config{DataDir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}
	emb, _, _, err := a.newEmbedder(context.Background(), CapsulesConfig{ModelFetch: true, ModelURL: "http://127.0.0.1:1"})
	if err != nil || emb != nil {
		t.Fatalf("emb %v, err %v: want semantic search off and no error", emb, err)
	}
	// An explicit onnx choice that cannot get its model is an error.
	if _, _, _, err := a.newEmbedder(context.Background(), CapsulesConfig{Embedder: "onnx", ModelFetch: true, ModelURL: "http://127.0.0.1:1"}); err == nil {
		t.Fatal("embedder onnx without a model: no error")
	}
}

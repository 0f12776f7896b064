package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestPlanEmbedders(t *testing.T) {
	t.Parallel()
	data := "/data"
	def := filepath.Join(data, "models", "all-MiniLM-L6-v2")
	files := func(paths ...string) func(string) bool {
		set := map[string]bool{}
		for _, p := range paths {
			set[p] = true
		}
		return func(p string) bool { return set[p] }
	}
	onnxFiles := []string{"/onnx/vocab.txt", "/onnx/model.onnx"}
	stFiles := []string{"/st/model.safetensors", "/st/config.json"}
	tests := []struct {
		name  string
		cfg   CapsulesConfig
		files []string
		want  []embedderPlan
	}{
		{"auto, nothing present: off", CapsulesConfig{}, nil, nil},
		{"auto: onnx, then gobert", CapsulesConfig{ONNXDir: "/onnx", ModelDir: "/st"}, append(onnxFiles, stFiles...),
			[]embedderPlan{{"onnx", "/onnx"}, {"gobert", "/st"}}},
		{"auto without the onnx model: gobert", CapsulesConfig{ONNXDir: "/onnx", ModelDir: "/st"}, append([]string{"/onnx/vocab.txt"}, stFiles...),
			[]embedderPlan{{"gobert", "/st"}}},
		{"auto: the data dir's model", CapsulesConfig{}, []string{def + "/vocab.txt", def + "/model.onnx", def + "/model.safetensors", def + "/config.json"},
			[]embedderPlan{{"onnx", def}, {"gobert", def}}},
		{"auto: gobert from the onnx folder", CapsulesConfig{ONNXDir: "/st"}, stFiles, []embedderPlan{{"gobert", "/st"}}},
		{"auto: a quantized model file", CapsulesConfig{ONNXDir: "/onnx", ModelFile: "model_quantized.onnx"},
			[]string{"/onnx/vocab.txt", "/onnx/model_quantized.onnx"}, []embedderPlan{{"onnx", "/onnx"}}},
		{"auto with a URL: http only", CapsulesConfig{EmbedURL: "http://e", ONNXDir: "/onnx"}, onnxFiles, []embedderPlan{{"http", "http://e"}}},
		{"onnx only", CapsulesConfig{Embedder: "onnx", ONNXDir: "/onnx", ModelDir: "/st"}, append(onnxFiles, stFiles...), []embedderPlan{{"onnx", "/onnx"}}},
		{"gobert only", CapsulesConfig{Embedder: "gobert", ONNXDir: "/onnx", ModelDir: "/st"}, append(onnxFiles, stFiles...), []embedderPlan{{"gobert", "/st"}}},
		{"gobert, model dir given but empty", CapsulesConfig{Embedder: "gobert", ModelDir: "/none", ONNXDir: "/st"}, stFiles, nil},
		{"http without a URL", CapsulesConfig{Embedder: "http"}, onnxFiles, nil},
		{"onnx ignores the URL", CapsulesConfig{Embedder: "onnx", EmbedURL: "http://e", ONNXDir: "/onnx"}, onnxFiles, []embedderPlan{{"onnx", "/onnx"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := planEmbedders(tc.cfg, data, files(tc.files...))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planEmbedders = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeEmbeddingsServer answers /v1/embeddings with 3-d vectors.
func fakeEmbeddingsServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/embeddings" || json.Unmarshal(b, &req) != nil || req.Model != "m" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		for i := range req.Input {
			out.Data = append(out.Data, datum{i, []float32{1, 2, 2}})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNewEmbedder(t *testing.T) {
	t.Parallel()
	srv := fakeEmbeddingsServer(t)
	junk := t.TempDir() // files that look like models but are not
	for _, f := range []string{"vocab.txt", "model.onnx", "model.safetensors", "config.json"} {
		if err := os.WriteFile(filepath.Join(junk, f), []byte("not a model"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		cfg     CapsulesConfig
		wantDim int // 0: semantic search off
		wantErr bool
	}{
		{"auto, no model: off", CapsulesConfig{Embedder: "auto"}, 0, false},
		{"off", CapsulesConfig{Embedder: "off", EmbedURL: srv.URL}, 0, false},
		{"auto with a URL: http", CapsulesConfig{EmbedURL: srv.URL, EmbedModel: "m"}, 3, false},
		{"http", CapsulesConfig{Embedder: "http", EmbedURL: srv.URL + "/v1", EmbedModel: "m"}, 3, false},
		{"http without a model name", CapsulesConfig{Embedder: "http", EmbedURL: srv.URL}, 0, true},
		{"http without a URL", CapsulesConfig{Embedder: "http"}, 0, true},
		{"auto, broken model files: off", CapsulesConfig{ONNXDir: junk, ORTLib: filepath.Join(junk, "none.so")}, 0, false},
		{"onnx, broken model: error", CapsulesConfig{Embedder: "onnx", ONNXDir: junk, ORTLib: filepath.Join(junk, "none.so")}, 0, true},
		{"gobert, broken model: error", CapsulesConfig{Embedder: "gobert", ModelDir: junk}, 0, true},
		{"gobert, no model: error", CapsulesConfig{Embedder: "gobert"}, 0, true},
		{"unknown", CapsulesConfig{Embedder: "word2vec"}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &App{cfg: Config{DataDir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}
			emb, _, closeFn, err := a.newEmbedder(context.Background(), tc.cfg)
			if closeFn != nil {
				defer closeFn()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			got := 0
			if emb != nil {
				got = emb.Dim()
				vs, err := emb.Embed(context.Background(), []string{"hello"})
				if err != nil || len(vs) != 1 || len(vs[0]) != got {
					t.Fatalf("Embed: %v %v", vs, err)
				}
			}
			if got != tc.wantDim {
				t.Errorf("dim %d, want %d", got, tc.wantDim)
			}
		})
	}
}

// TestNewEmbedderGoBERT starts the pure-Go embedder on the real model when
// it is on this machine (CAPSULED_MODEL_DIR, set by .ci/fetch-model.sh).
func TestNewEmbedderGoBERT(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CAPSULED_MODEL_DIR")
	if dir == "" || !fileExists(filepath.Join(dir, "model.safetensors")) {
		t.Skip("no sentence-transformers model (CAPSULED_MODEL_DIR)")
	}
	for _, cfg := range []CapsulesConfig{
		{Embedder: "gobert", ModelDir: dir},
		{ModelDir: dir, ONNXDir: t.TempDir()}, // auto without an ONNX model
	} {
		a := &App{cfg: Config{DataDir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}
		emb, tokens, closeFn, err := a.newEmbedder(context.Background(), cfg)
		if err != nil || emb == nil {
			t.Fatalf("%+v: %v %v", cfg, emb, err)
		}
		if emb.Dim() != 384 || tokens == nil {
			t.Errorf("dim %d, tokenizer %v", emb.Dim(), tokens)
		}
		closeFn()
	}
}

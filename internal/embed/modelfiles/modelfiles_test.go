package modelfiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"capsuled/internal/domain"
)

// fakeHub is a fake of the model's public home: it serves the given files
// by path and counts requests.
type fakeHub struct {
	*httptest.Server
	hits atomic.Int64
}

func newFakeHub(t *testing.T, files map[string]string) *fakeHub {
	t.Helper()
	h := &fakeHub{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		body, ok := files[strings.TrimPrefix(r.URL.Path, "/repo/resolve/main/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(h.Close)
	return h
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

var hubFiles = map[string]string{
	"config.json":               `{"model_type":"bert"}`,
	"vocab.txt":                 "[PAD]\n[UNK]\n[CLS]\n[SEP]\n",
	"tokenizer.json":            `{}`,
	"onnx/model.onnx":           strings.Repeat("onnx", 1000),
	"onnx/model_quantized.onnx": strings.Repeat("int8", 500),
}

func TestLocateDownloads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		quantized bool
		checksums map[string]Checksum
		wantFile  string
		wantErr   domain.Kind
	}{
		{"fp32", false, map[string]Checksum{"onnx/model.onnx": {SHA256: sum(hubFiles["onnx/model.onnx"]), Size: 4000}}, "model.onnx", ""},
		{"int8 abbreviated digest", true, map[string]Checksum{"onnx/model_quantized.onnx": {SHA256: sum(hubFiles["onnx/model_quantized.onnx"])[:8] + "…" + sum(hubFiles["onnx/model_quantized.onnx"])[60:]}}, "model_quantized.onnx", ""},
		{"checksum mismatch", false, map[string]Checksum{"onnx/model.onnx": {SHA256: sum("other")}}, "", domain.KindUpstream},
		{"size mismatch", true, map[string]Checksum{"onnx/model_quantized.onnx": {Size: 1}}, "", domain.KindUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hub := newFakeHub(t, hubFiles)
			data := t.TempDir()
			var progress bytes.Buffer
			cfg := Config{DataDir: data, BaseURL: hub.URL + "/repo/resolve/main/", Quantized: tt.quantized, Checksums: tt.checksums, Progress: &progress, Source: SourceHome}
			m, err := Locate(context.Background(), cfg)
			if tt.wantErr != "" {
				if domain.KindOf(err) != tt.wantErr {
					t.Fatalf("err %v, want kind %s", err, tt.wantErr)
				}
				entries, _ := os.ReadDir(filepath.Join(data, "models", DefaultName))
				for _, e := range entries {
					if strings.HasSuffix(e.Name(), ".onnx") {
						t.Errorf("a rejected download was kept: %s", e.Name())
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Format != FormatONNX || filepath.Base(m.File) != tt.wantFile || !m.Downloaded {
				t.Fatalf("model %+v", m)
			}
			if !strings.Contains(progress.String(), "fetching onnx/") || !strings.Contains(progress.String(), "100%") {
				t.Errorf("progress output %q", progress.String())
			}
			// Second call: found on disk, no request.
			before := hub.hits.Load()
			m2, err := Locate(context.Background(), cfg)
			if err != nil || m2.File != m.File || m2.Downloaded || hub.hits.Load() != before {
				t.Fatalf("second Locate: %+v %v, %d new requests", m2, err, hub.hits.Load()-before)
			}
		})
	}
}

func TestLocateModelDir(t *testing.T) {
	t.Parallel()
	write := func(dir string, names ...string) string {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name       string
		dir        string
		quantized  bool
		wantFormat Format
		wantFile   string
	}{
		{"onnx", write(t.TempDir(), "vocab.txt", "model.onnx"), false, FormatONNX, "model.onnx"},
		{"prefer int8", write(t.TempDir(), "vocab.txt", "model.onnx", "model_quantized.onnx"), true, FormatONNX, "model_quantized.onnx"},
		{"safetensors", write(t.TempDir(), "vocab.txt", "config.json", "model.safetensors"), false, FormatSafetensors, "model.safetensors"},
		{"empty", t.TempDir(), false, "", ""},
		{"no tokenizer", write(t.TempDir(), "model.onnx"), false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Locate(context.Background(), Config{ModelDir: tt.dir, Quantized: tt.quantized, BaseURL: "http://127.0.0.1:1"})
			if tt.wantFormat == "" {
				if domain.KindOf(err) != domain.KindUnavailable {
					t.Fatalf("err %v, want unavailable", err)
				}
				return
			}
			if err != nil || m.Format != tt.wantFormat || filepath.Base(m.File) != tt.wantFile {
				t.Fatalf("Locate = %+v, %v", m, err)
			}
		})
	}
}

func TestLocateFailures(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t, map[string]string{"config.json": "{}"}) // no vocab, no model
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"offline", Config{DataDir: t.TempDir(), Offline: true}},
		{"missing files", Config{DataDir: t.TempDir(), BaseURL: hub.URL + "/repo/resolve/main", Source: SourceHome}},
		{"unreachable", Config{DataDir: t.TempDir(), BaseURL: deadURL, Source: SourceHome}},
		{"home and index unreachable", Config{DataDir: t.TempDir(), BaseURL: deadURL, Index: PyPI{IndexURLs: []string{deadURL}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Progress = &bytes.Buffer{}
			if _, err := Locate(context.Background(), tt.cfg); domain.KindOf(err) != domain.KindUnavailable {
				t.Fatalf("err %v, want unavailable", err)
			}
		})
	}
	if _, err := Locate(context.Background(), Config{}); err == nil {
		t.Error("no dirs: Locate succeeded")
	}
}

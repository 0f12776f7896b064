package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// served is a `capsuled serve` running in this process.
type served struct {
	url    string
	stderr *syncBuffer
	stop   func() int
}

// serveCLI runs `capsuled serve` on the data directory with extra flags
// until the test ends (or stop), and waits until it listens.
func serveCLI(t *testing.T, dir string, flags ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errb := &syncBuffer{}
	done := make(chan int, 1)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--model-fetch=false"}, flags...)
	go func() { done <- run(ctx, args, io.Discard, errb) }()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	listening := regexp.MustCompile(`addr=http://(127\.0\.0\.1:\d+)`)
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		if m := listening.FindStringSubmatch(errb.String()); m != nil {
			return &served{url: "http://" + m[1], stderr: errb, stop: stop}
		}
		select {
		case code := <-done:
			stopped = true
			t.Fatalf("serve exited %d: %s", code, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start: %s", errb.String())
	return nil
}

// adminKey is the admin key a first start printed.
func (s *served) adminKey(t *testing.T) string {
	t.Helper()
	key := regexp.MustCompile(`csk_[0-9A-Za-z]{43}`).FindString(s.stderr.String())
	if key == "" {
		t.Fatalf("no admin key printed: %s", s.stderr.String())
	}
	return key
}

// call sends a request with the key and decodes a JSON answer into out.
func (s *served) call(t *testing.T, key, method, path, contentType string, body []byte, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// curlUpload sends a file as `curl -F file=@path` does: a multipart body
// with the file part only, named by the file's base name.
func (s *served) curlUpload(t *testing.T, key, capsule, path string, out any) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", filepath.Base(path))
	w.Write(data)
	mw.Close()
	return s.call(t, key, "POST", "/v1/capsules/"+capsule+"/items?wait=true", mw.FormDataContentType(), buf.Bytes(), out)
}

type cliItem struct {
	ID       string         `json:"id"`
	URI      string         `json:"uri"`
	Status   string         `json:"status"`
	Metadata map[string]any `json:"metadata"`
}

type cliHit struct {
	ItemID string `json:"item_id"`
	Idx    int    `json:"idx"`
}

// TestAddAndCurlMakeOneItem: `capsuled add docs docs/handbook.md` and then
// `curl -F file=@docs/handbook.md` store one item, and a query finds its
// chunk once (#20 point 6).
func TestAddAndCurlMakeOneItem(t *testing.T) {
	dir := t.TempDir()
	s := serveCLI(t, dir, "--embedder", "off")
	key := s.adminKey(t)
	docs := filepath.Join(t.TempDir(), "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	handbook := filepath.Join(docs, "handbook.md")
	if err := os.WriteFile(handbook, []byte("# Handbook\n\nThe office opens at nine and closes at six.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "capsule", "create", "docs", "--url", s.url, "--key", key); code != 0 {
		t.Fatalf("capsule create: %d %s", code, errs)
	}
	if code, out, errs := runCLI(t, "add", "docs", handbook, "--url", s.url, "--key", key); code != 0 {
		t.Fatalf("add: %d %s %s", code, out, errs)
	}
	var it cliItem
	if code := s.curlUpload(t, key, "docs", handbook, &it); code != http.StatusOK {
		t.Fatalf("curl upload: %d %+v, want 200 (the item capsuled add stored)", code, it)
	}
	if want := "file://" + filepath.ToSlash(handbook); it.URI != want {
		t.Errorf("uri %q, want %q", it.URI, want)
	}
	var page struct {
		Data []cliItem `json:"data"`
	}
	s.call(t, key, "GET", "/v1/capsules/docs/items", "", nil, &page)
	if len(page.Data) != 1 {
		t.Fatalf("%d items, want 1: %+v", len(page.Data), page.Data)
	}
	var hits []cliHit
	if code := s.call(t, key, "POST", "/capsules/docs/query", "application/json", []byte(`{"query":"when does the office open"}`), &hits); code != 200 {
		t.Fatalf("query: %d", code)
	}
	seen := map[string]bool{}
	for _, h := range hits {
		k := fmt.Sprintf("%s/%d", h.ItemID, h.Idx)
		if seen[k] {
			t.Fatalf("chunk %s returned twice: %+v", k, hits)
		}
		seen[k] = true
	}
	if len(hits) != 1 {
		t.Fatalf("hits %+v, want the one chunk", hits)
	}
}

// modelFlags are serve's flags for the real embedding model (the ONNX
// export of all-MiniLM-L6-v2 with ONNX Runtime), from the environment of
// .cache/env.sh; the test is skipped without them.
func modelFlags(t *testing.T, extra ...string) []string {
	t.Helper()
	dir, lib := os.Getenv("CAPSULED_ONNX_DIR"), os.Getenv("CAPSULED_ORT_LIB")
	if dir == "" || lib == "" {
		t.Skip("no embedding model: source .cache/env.sh (CAPSULED_ONNX_DIR, CAPSULED_ORT_LIB)")
	}
	return append([]string{"--embedder", "onnx", "--onnx-dir", dir, "--ort-lib", lib}, extra...)
}

type readiness struct {
	Embedding *struct {
		Semantic             bool   `json:"semantic"`
		Model                string `json:"model"`
		StoredModel          string `json:"stored_model"`
		ItemsWithoutVectors  int    `json:"items_without_vectors"`
		ChunksWithoutVectors int    `json:"chunks_without_vectors"`
	} `json:"embedding"`
}

// TestItemsGetVectorsOnceAModelIsThere: items added while semantic search
// was off get vectors from the background job when the server starts with
// a model (readyz shows the backlog), a change of model is refused with
// the command to run, and capsuled reindex moves the store to the new
// model (#20 point 2).
// It runs on SQLite and, with CAPSULED_TEST_POSTGRES, on PostgreSQL.
func TestItemsGetVectorsOnceAModelIsThere(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { vectorsOnceAModelIsThere(t, nil) })
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv("CAPSULED_TEST_POSTGRES")
		if base == "" {
			t.Skip("CAPSULED_TEST_POSTGRES is not set: source .cache/pg/env.sh")
		}
		store, _ := replicaSchema(t, base)
		vectorsOnceAModelIsThere(t, []string{"--store", store})
	})
}

func vectorsOnceAModelIsThere(t *testing.T, storeFlags []string) {
	model := append(modelFlags(t), storeFlags...)
	dir := t.TempDir()
	s := serveCLI(t, dir, append([]string{"--embedder", "off"}, storeFlags...)...)
	key := s.adminKey(t)
	if code, _, errs := runCLI(t, "capsule", "create", "sea", "--url", s.url, "--key", key); code != 0 {
		t.Fatalf("capsule create: %d %s", code, errs)
	}
	files := filepath.Join(t.TempDir(), "notes")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"tides.md":     "# Tides\n\nThe gravitational pull of the moon lifts the oceans twice a day: high water, then low water.\n",
		"volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava and ash.\n",
		"bread.md":     "# Bread\n\nKnead the dough, let it prove for an hour, then bake it until golden.\n",
	} {
		if err := os.WriteFile(filepath.Join(files, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := runCLI(t, "add", "sea", files, "--url", s.url, "--key", key); code != 0 {
		t.Fatalf("add: %d %s %s", code, out, errs)
	}
	semantic := `{"query":"why does the sea level go up and down every day","wishlist":{"mode":"semantic"}}`
	if code := s.call(t, key, "POST", "/capsules/sea/query", "application/json", []byte(semantic), nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("semantic query without a model: %d, want 422", code)
	}
	var ready readiness
	s.call(t, key, "GET", "/readyz", "", nil, &ready)
	if e := ready.Embedding; e == nil || e.Semantic || e.ItemsWithoutVectors != 3 || e.StoredModel != "" {
		t.Fatalf("readyz without a model: %+v", e)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	// With the model: the background job embeds the three items.
	s = serveCLI(t, dir, model...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ready = readiness{}
		s.call(t, key, "GET", "/readyz", "", nil, &ready)
		if e := ready.Embedding; e != nil && e.Semantic && e.ItemsWithoutVectors == 0 {
			if e.Model != "all-MiniLM-L6-v2" || e.StoredModel != e.Model || e.ChunksWithoutVectors != 0 {
				t.Fatalf("readyz after embedding: %+v", e)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("items still without vectors: %+v\n%s", ready.Embedding, s.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var hits []struct {
		URI   string  `json:"uri"`
		Score float64 `json:"score"`
	}
	if code := s.call(t, key, "POST", "/capsules/sea/query", "application/json", []byte(semantic), &hits); code != 200 || len(hits) == 0 {
		t.Fatalf("semantic query with the model: %d %+v, want hits", code, hits)
	}
	if want := "file://" + filepath.ToSlash(filepath.Join(files, "tides.md")); hits[0].URI != want {
		t.Fatalf("first semantic hit %+v, want the tides note", hits)
	}
	if !strings.Contains(s.stderr.String(), "searchable items without vectors: embedding them in the background") {
		t.Errorf("the logs do not tell of the embedding:\n%s", s.stderr.String())
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	// Another model (the int8 export): refused, naming both and the command.
	other := append(modelFlags(t, "--model-file", "model_quantized.onnx"), storeFlags...)
	var errb syncBuffer
	code := run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--model-fetch=false"}, other...), io.Discard, &errb)
	if code == 0 {
		t.Fatal("serve started with another embedding model")
	}
	command := "capsuled reindex --data " + dir
	if storeFlags != nil {
		command = "capsuled reindex --store <the PostgreSQL URL>"
	}
	for _, want := range []string{`"all-MiniLM-L6-v2" (384 dimensions)`, `"all-MiniLM-L6-v2-int8" (384 dimensions)`, command} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errb.String())
		}
	}

	// capsuled reindex moves the store to the new model; serve then starts.
	code, out, errs := runCLI(t, append([]string{"reindex", "--data", dir, "--model-fetch=false"}, other...)...)
	if code != 0 || !strings.Contains(out, `from "all-MiniLM-L6-v2" (384 dimensions) to "all-MiniLM-L6-v2-int8" (384 dimensions)`) ||
		!strings.Contains(out, "embedded 3 items") {
		t.Fatalf("reindex: %d\n%s\n%s", code, out, errs)
	}
	s = serveCLI(t, dir, other...)
	ready = readiness{}
	s.call(t, key, "GET", "/readyz", "", nil, &ready)
	if e := ready.Embedding; e == nil || e.StoredModel != "all-MiniLM-L6-v2-int8" || e.ItemsWithoutVectors != 0 {
		t.Fatalf("readyz after reindex: %+v", e)
	}
	hits = nil
	if code := s.call(t, key, "POST", "/capsules/sea/query", "application/json", []byte(semantic), &hits); code != 200 || len(hits) == 0 ||
		!strings.HasSuffix(hits[0].URI, "/tides.md") {
		t.Fatalf("semantic query after reindex: %d %+v", code, hits)
	}
}

// TestReindexErrors: reindex without a model, and with arguments, fails
// with a message (no store is changed).
func TestReindexErrors(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := runCLI(t, "reindex", "--data", dir, "--embedder", "off")
	if code == 0 || !strings.Contains(errs, "reindex needs an embedding model") {
		t.Fatalf("reindex without a model: %d %s", code, errs)
	}
	code, _, errs = runCLI(t, "reindex", "--data", dir, "extra")
	if code == 0 || !strings.Contains(errs, "reindex takes no arguments") {
		t.Fatalf("reindex with an argument: %d %s", code, errs)
	}
	code, _, errs = runCLI(t, "reindex", "--data", dir, "--embedder", "bogus")
	if code == 0 || !strings.Contains(errs, "bogus") {
		t.Fatalf("reindex with a bad embedder: %d %s", code, errs)
	}
}

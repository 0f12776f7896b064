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

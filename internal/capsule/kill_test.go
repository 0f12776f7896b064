package capsule_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKillDuringIngestion starts the real capsuled binary, queues many items,
// kills it with SIGKILL while it ingests, restarts it on the same data
// directory and checks that no ready item was lost and no item is half
// indexed (every chunk belongs to a ready item, every ready item has its
// chunks), then that the rest finish.
func TestKillDuringIngestion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the capsuled binary")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "capsuled")
	build := exec.Command("go", "build", "-o", bin, "capsuled/cmd/capsuled")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// One worker leaves one job running at the kill; sixteen leave many,
	// all rescued at the restart.
	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			t.Parallel()
			killDuringIngestion(t, bin, filepath.Join(t.TempDir(), "data"), fmt.Sprint(workers))
		})
	}
}

func killDuringIngestion(t *testing.T, bin, data, workers string) {
	srv, key := startServer(t, bin, data, "", workers)
	call(t, srv, key, "POST", "/v1/capsules", map[string]any{"name": "k"}, nil)
	const n = 120
	para := strings.Repeat("Ingestion must survive a kill at any moment without losing data. ", 60)
	// The senders report errors on errs: t.Fatal belongs to the test's own
	// goroutine.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				err := send(srv, key, "POST", "/v1/capsules/k/items", map[string]any{
					"content": fmt.Sprintf("Document %d.\n\n%s\n\n%s", i, para, strings.Repeat(fmt.Sprintf("word%d ", i), 8000)),
					"uri":     fmt.Sprint("doc-", i)}, nil)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		srv.kill(t)
		t.Fatal(err)
	}
	var ready map[string]int
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready = readyItems(t, srv, key)
		if len(ready) >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.kill(t)
	if len(ready) == n {
		t.Skip("ingestion finished before the kill; nothing to test on this machine")
	}
	t.Logf("killed with %d of %d items ready", len(ready), n)

	srv, _ = startServer(t, bin, data, key, workers)
	defer srv.kill(t)
	items := listItems(t, srv, key)
	if len(items) != n {
		t.Fatalf("%d items after restart, want %d", len(items), n)
	}
	for _, it := range items {
		if want, ok := ready[it.ID]; ok && (it.Status != "ready" || it.ChunkCount != want) {
			t.Errorf("ready item %s lost: %s with %d chunks", it.ID, it.Status, it.ChunkCount)
		}
		if it.Status == "ready" && it.ChunkCount == 0 || it.Status != "ready" && it.ChunkCount != 0 {
			t.Errorf("half-indexed item %s: %s with %d chunks", it.ID, it.Status, it.ChunkCount)
		}
	}
	sum := 0
	deadline = time.Now().Add(120 * time.Second)
	for len(readyItems(t, srv, key)) < n {
		if time.Now().After(deadline) {
			t.Fatal("items did not finish after the restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Once every item is ready (the restarted server ingests meanwhile, so
	// not before), the capsule holds exactly its items' chunks.
	for _, it := range listItems(t, srv, key) {
		sum += it.ChunkCount
	}
	var c struct {
		ChunkCount int `json:"chunk_count"`
	}
	call(t, srv, key, "GET", "/v1/capsules/k", nil, &c)
	if c.ChunkCount != sum {
		t.Errorf("capsule holds %d chunks, its items %d: orphaned chunks", c.ChunkCount, sum)
	}
	var hits []struct {
		URI string `json:"uri"`
	}
	call(t, srv, key, "POST", "/capsules/k/query", map[string]any{"query": "word7"}, &hits)
	if len(hits) == 0 || hits[0].URI != "doc-7" {
		t.Fatalf("query after restart: %+v", hits)
	}
}

type proc struct {
	cmd *exec.Cmd
	url string
}

func (p *proc) kill(t *testing.T) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

var adminKey = regexp.MustCompile(`csk_[A-Za-z0-9]+`)

// startServer runs capsuled serve on a free port; it returns the admin key
// printed at first start (or the given one).
func startServer(t *testing.T, bin, data, key, workers string) (*proc, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", addr, "--embedder", "off", "--ingest-workers", workers)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, url: "http://" + addr}
	keyc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := adminKey.FindString(sc.Text()); m != "" && !sent {
				keyc <- m
				sent = true
			}
		}
	}()
	if key == "" {
		select {
		case key = <-keyc:
		case <-time.After(30 * time.Second):
			p.kill(t)
			t.Fatal("no admin key printed")
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			p.kill(t)
			t.Fatal("server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p, key
}

func call(t *testing.T, p *proc, key, method, path string, body, out any) {
	t.Helper()
	if err := send(p, key, method, path, body, out); err != nil {
		t.Fatal(err)
	}
}

// send makes one API call; safe from any goroutine.
func send(p *proc, key, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.url+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

type listed struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	ChunkCount int    `json:"chunk_count"`
}

func listItems(t *testing.T, p *proc, key string) []listed {
	var page struct {
		Data []listed `json:"data"`
	}
	call(t, p, key, "GET", "/v1/capsules/k/items?limit=1000", nil, &page)
	return page.Data
}

func readyItems(t *testing.T, p *proc, key string) map[string]int {
	out := map[string]int{}
	for _, it := range listItems(t, p, key) {
		if it.Status == "ready" {
			out[it.ID] = it.ChunkCount
		}
	}
	return out
}

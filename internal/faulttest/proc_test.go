package faulttest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver of PRAGMA integrity_check
)

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// capsuledBin builds cmd/capsuled once per test run.
func capsuledBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs capsuled as a subprocess; skipped with -short")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "capsuled-faulttest-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "capsuled")
		cmd := exec.Command("go", "build", "-o", buildBin, "capsuled/cmd/capsuled")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// createKey creates a key in dataDir with the CLI and returns its id and
// secret.
func createKey(t *testing.T, bin, dataDir, name, scopes string) (id, secret string) {
	t.Helper()
	out, err := exec.Command(bin, "keys", "create", "--data", dataDir, "--init", "--name", name, "--scopes", scopes, "--json").Output()
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	var k struct {
		Key struct {
			ID string `json:"id"`
		} `json:"key"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatalf("keys create: %v: %s", err, out)
	}
	return k.Key.ID, k.Secret
}

// proc is a running `capsuled serve`.
type proc struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan error
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer starts capsuled serve on a free loopback port over dataDir,
// optionally through a wrapper (e.g. prlimit), and waits until it listens.
func startServer(t *testing.T, bin, dataDir string, extra ...string) *proc {
	t.Helper()
	p, err := tryStartServer(t, bin, dataDir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryStartServer is startServer that returns the server's start-up error.
func tryStartServer(t *testing.T, bin, dataDir string, extra ...string) (*proc, error) {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dataDir, "--embedder", "off",
		"--rate-limit-rpm", "0", "--log-format", "json"}, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	read := make(chan struct{}) // closed once stderr is read to its end
	go func() {
		defer close(read)
		sc := bufio.NewScanner(io.TeeReader(stderr, p.logs))
		sent := false
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if !sent && json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "capsuled listening" {
				addr <- line.Addr
				sent = true
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	// Wait closes the pipe: it waits for the reader to reach the end the
	// process's exit makes, or the last lines (the reason it stopped) could
	// be lost on a loaded machine.
	go func() {
		<-read
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.url = <-addr:
	case err := <-p.done:
		return nil, fmt.Errorf("capsuled serve exited before listening: %v: %s", err, strings.TrimSpace(p.logs.String()))
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("capsuled serve did not listen within 30s: %s", p.logs.String())
	}
	return p, nil
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// call sends one JSON request and returns the status and body; err is a
// transport error (the server is gone).
func call(ctx context.Context, c *http.Client, method, url, cred string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// integrityCheck runs PRAGMA integrity_check on the database of dataDir.
func integrityCheck(t *testing.T, dataDir string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	var res []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		res = append(res, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(res, "\n") != "ok" {
		t.Fatalf("PRAGMA integrity_check: %s", strings.Join(res, "\n"))
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// runCLI runs the command in process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	t.Parallel()
	if code, _, stderr := runCLI(t); code != 2 || !strings.Contains(stderr, "serve") {
		t.Fatalf("no args: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Fatalf("unknown: %d %q", code, stderr)
	}
	if code, out, _ := runCLI(t, "version"); code != 0 || strings.TrimSpace(out) != version {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestKeysCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "keys", "create", "--data", dir, "--init", "--name", "ingest", "--scopes", "capsules:read,capsules:write", "--capsules", "docs", "--json")
	if code != 0 {
		t.Fatalf("create: %d %s", code, stderr)
	}
	var created struct {
		Key struct {
			ID       string   `json:"id"`
			Prefix   string   `json:"prefix"`
			Scopes   []string `json:"scopes"`
			Capsules []string `json:"capsules"`
		} `json:"key"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Secret, created.Key.Prefix) || len(created.Key.Scopes) != 2 || created.Key.Capsules[0] != "docs" {
		t.Fatalf("created %+v", created)
	}

	code, out, _ = runCLI(t, "keys", "list", "--data", dir)
	if code != 0 || !strings.Contains(out, created.Key.ID) || strings.Contains(out, created.Secret) {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "keys", "revoke", "--data", dir, created.Key.ID)
	if code != 0 || !strings.Contains(out, "Revoked key "+created.Key.ID) {
		t.Fatalf("revoke: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "keys", "list", "--data", dir, "--json")
	var list struct {
		Data []struct {
			RevokedAt *time.Time `json:"revoked_at"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Data) != 1 || list.Data[0].RevokedAt == nil {
		t.Fatalf("list after revoke: %d %q", code, out)
	}

	// Errors: a clear message and a non-zero status.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"keys", "create", "--data", dir, "--name", "x", "--scopes", "superuser"}, 1, `unknown scope "superuser"`},
		{[]string{"keys", "create", "--data", dir, "--scopes", "chat"}, 1, "key name must be"},
		{[]string{"keys", "revoke", "--data", dir, "key_nope"}, 1, `key "key_nope" not found`},
		{[]string{"keys", "revoke", "--data", dir}, 2, "usage"},
		{[]string{"keys", "rotate", "--data", dir}, 2, "unknown subcommand"},
		{[]string{"keys", "create", "--data", dir, "--store", "mysql://x", "--name", "x", "--scopes", "chat"}, 1, "want a postgres:// URL"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: %d %q, want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestKeysNoDatabase: keys create in a directory that holds no database
// (a typo, or another working directory than the server's) is refused and
// says where it looked, instead of creating a database the server never
// reads; the message of a created key names its database.
func TestKeysNoDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "keys", "create", "--data", dir, "--name", "x", "--scopes", "chat")
	want := filepath.Join(dir, "capsuled.db")
	if code != 1 || !strings.Contains(stderr, "no database at "+want) || !strings.Contains(stderr, "--init") {
		t.Fatalf("create without a database: %d %q", code, stderr)
	}
	if _, err := os.Stat(want); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a database was created anyway: %v", err)
	}
	code, out, stderr := runCLI(t, "keys", "create", "--data", dir, "--init", "--name", "x", "--scopes", "chat")
	if code != 0 || !strings.Contains(out, "in "+want) {
		t.Fatalf("create --init: %d %q %q", code, out, stderr)
	}
	if code, out, _ := runCLI(t, "keys", "list", "--data", dir); code != 0 || !strings.Contains(out, "x") {
		t.Fatalf("list: %d %q", code, out)
	}
}

func TestKeysEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CAPSULED_DATA", dir)
	if code, _, stderr := runCLI(t, "keys", "create", "--init", "--name", "env", "--scopes", "chat"); code != 0 {
		t.Fatalf("create: %s", stderr)
	}
	if code, out, _ := runCLI(t, "keys", "list", "--data", filepath.Join(dir)); code != 0 || !strings.Contains(out, "env") {
		t.Fatalf("the key was not created in CAPSULED_DATA: %q", out)
	}
}

func TestConformanceValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		code int
		want string
	}{
		{"valid.jsonl", 0, "4 exchanges valid"},
		{"undocumented-status.jsonl", 1, "line 2: listKeys: response 418 breaks the spec: status is not supported"},
		{"bad-body.jsonl", 1, "line 1: listKeys: response 200 breaks the spec"},
		{"invalid-request-accepted.jsonl", 1, "the request breaks the spec"},
		{"not-json.jsonl", 1, "line 1: not an exchange"},
		{"missing.jsonl", 1, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runCLI(t, "conformance", "validate", filepath.Join("testdata", tt.file))
			if code != tt.code || !strings.Contains(out+stderr, tt.want) {
				t.Fatalf("exit %d, want %d; output %q, want %q", code, tt.code, out+stderr, tt.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
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

// TestServe starts `capsuled serve` on a fresh data directory: it prints an
// admin key once, serves with it, shuts down gracefully, and does not print a
// key again on the next start.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	start := func() (addr, stderr func() string, stop func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		var errb syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--model-fetch=false"}, io.Discard, &errb)
		}()
		listening := regexp.MustCompile(`addr=http://(127\.0\.0\.1:\d+)`)
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if m := listening.FindStringSubmatch(errb.String()); m != nil {
				a := m[1]
				return func() string { return a }, errb.String, func() int { cancel(); return <-done }
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		t.Fatalf("server did not start: %s", errb.String())
		return nil, nil, nil
	}

	addr, stderr, stop := start()
	key := regexp.MustCompile(`csk_[0-9A-Za-z]{43}`).FindString(stderr())
	if key == "" {
		t.Fatalf("no admin key printed: %s", stderr())
	}
	req, _ := http.NewRequest("GET", "http://"+addr()+"/v1/keys", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("admin key refused: %d", resp.StatusCode)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, stderr())
	}
	if !strings.Contains(stderr(), "shutting down") {
		t.Fatalf("no graceful shutdown logged: %s", stderr())
	}

	_, stderr2, stop2 := start()
	if code := stop2(); code != 0 {
		t.Fatalf("second serve exited %d", code)
	}
	sc := bufio.NewScanner(strings.NewReader(stderr2()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "csk_") {
			t.Fatalf("a key was printed on the second start: %s", sc.Text())
		}
	}
}

func TestModelsCommands(t *testing.T) {
	t.Setenv("CAPSULED_MODEL_DIR", "")
	if code, _, stderr := runCLI(t, "models", "convert", "--from", "x"); code != 2 || !strings.Contains(stderr, "usage") {
		t.Fatalf("convert without --to: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "models", "shrink"); code != 2 || !strings.Contains(stderr, "unknown subcommand") {
		t.Fatalf("unknown: %d %q", code, stderr)
	}
	code, _, stderr := runCLI(t, "models", "fetch", "--data", t.TempDir(), "--model-url", "http://127.0.0.1:1", "--model-dir", "", "--source", "home")
	if code != 1 || !strings.Contains(stderr, "cannot download the embedding model") {
		t.Fatalf("fetch from nowhere: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "models", "convert", "--from", t.TempDir(), "--to", t.TempDir()); code != 1 || stderr == "" {
		t.Fatalf("convert an empty folder: %d %q", code, stderr)
	}
}

// TestConfirmRefusesWithoutATerminal: memory delete without --yes asks on a
// terminal; from a script or a pipe it refuses instead of deleting.
func TestConfirmRefusesWithoutATerminal(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fmt.Fprintln(w, "y")
	w.Close()
	err = confirm(r, io.Discard, "delete? ")
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("confirm from a pipe: %v, want a refusal that names --yes", err)
	}
}

// Issue 15: help text never shows a key taken from the environment (it did
// for bench load's --key, from CAPSULED_API_KEY, and for serve's
// --upstream-key and --rerank-key).
func TestHelpHidesKeysFromTheEnvironment(t *testing.T) {
	const secret = "csk_from_the_environment_0123456789"
	t.Setenv("CAPSULED_API_KEY", secret)
	t.Setenv("CAPSULED_UPSTREAM_KEY", secret)
	t.Setenv("CAPSULED_RERANK_KEY", secret)
	for _, args := range [][]string{{"bench", "load", "-h"}, {"serve", "-h"}} {
		_, out, stderr := runCLI(t, args...)
		if strings.Contains(out+stderr, secret) || !strings.Contains(stderr, "key") {
			t.Errorf("%v: the help shows the key or no key flag:\n%s", args, stderr)
		}
	}
}

func TestServeMemoryLimitRefused(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"lots", "0", "-1GB"} {
		code, _, stderr := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--memory-limit", v)
		if code == 0 || !strings.Contains(stderr, "--memory-limit") {
			t.Errorf("--memory-limit %q: exit %d, %q", v, code, stderr)
		}
	}
}

func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	if err := setMemoryLimit("1.5GiB"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<29 {
		t.Fatalf("limit %d, want %d", got, int64(3<<29))
	}
}

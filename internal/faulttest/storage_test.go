package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of the given size at a new directory, or skips
// the test where mounting is not allowed.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

func remount(t *testing.T, dir, mode string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v %s", dir, mode, err, out)
	}
}

// apiErr is the spec's error body.
type apiErr struct {
	Error struct {
		Type string  `json:"type"`
		Code *string `json:"code"`
	} `json:"error"`
}

func errCode(body []byte) string {
	var e apiErr
	if json.Unmarshal(body, &e) != nil || e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

// TestReadOnlyDataDir starts capsuled on a data directory that is mounted
// read-only (a running server's files are open for writing, so Linux refuses
// to remount them read-only under it). The server either refuses to start
// with an error that says read-only, or serves reads and answers writes with
// 503 storage_read_only (never 500); once writable again the database passes
// PRAGMA integrity_check with every key it had.
func TestReadOnlyDataDir(t *testing.T) {
	bin := capsuledBin(t)
	dir := mountTmpfs(t, "64m")
	adminID, admin := createKey(t, bin, dir, "admin", "admin")
	otherID, _ := createKey(t, bin, dir, "other", "chat")
	remount(t, dir, "ro")
	t.Cleanup(func() { exec.Command("mount", "-o", "remount,rw", dir).Run() })

	// The store checks that the data directory is writable before SQLite
	// opens it, so the error says read-only (not SQLite's "unable to open
	// database file"); nothing starts, nothing is written, nothing damaged.
	out, err := exec.Command(bin, "keys", "create", "--data", dir, "--name", "ro", "--scopes", "chat").CombinedOutput()
	if err == nil {
		t.Errorf("keys create on a read-only data directory succeeded: %s", out)
	}
	if !strings.Contains(strings.ToLower(string(out)), "read-only") {
		t.Errorf("keys create on a read-only data directory does not say read-only: %s", bytes.TrimSpace(out))
	}

	p, startErr := tryStartServer(t, bin, dir)
	if startErr != nil {
		if !strings.Contains(strings.ToLower(startErr.Error()), "read-only") {
			t.Errorf("serve on a read-only data directory does not say read-only: %v", startErr)
		}
	} else {
		c := &http.Client{Timeout: 10 * time.Second}
		ctx := context.Background()
		st, body, err := call(ctx, c, "POST", p.url+"/v1/keys", admin, map[string]any{"name": "ro", "scopes": []string{"chat"}})
		if err != nil || st != http.StatusServiceUnavailable || errCode(body) != "storage_read_only" {
			t.Errorf("create key on a read-only data directory: %d %v %s, want 503 storage_read_only", st, err, body)
		}
		if st, body, err := call(ctx, c, "GET", p.url+"/healthz", "", nil); err != nil || st != http.StatusOK {
			t.Errorf("healthz on a read-only data directory: %d %v %s", st, err, body)
		}
		p.kill()
	}

	remount(t, dir, "rw")
	integrityCheck(t, dir)
	p = startServer(t, bin, dir)
	c := &http.Client{Timeout: 10 * time.Second}
	for _, id := range []string{adminID, otherID} {
		keyRevoked(t, c, p.url, admin, id) // fails the test when the key is missing
	}
	mustCreate(t, c, p.url, admin, "after")
}

// TestFullDisk fills a small tmpfs data directory under a running server:
// writes answer 503 storage_full (never 500), the server stays healthy, and
// once space is freed writes succeed again; after a SIGKILL the database
// passes PRAGMA integrity_check with every acknowledged key.
func TestFullDisk(t *testing.T) {
	bin := capsuledBin(t)
	dir := mountTmpfs(t, "32m")
	_, admin := createKey(t, bin, dir, "admin", "admin")
	p := startServer(t, bin, dir)
	c := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()
	var acked []string

	// Leave about 64 KiB free.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	free := int64(fs.Bavail) * fs.Bsize
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, free-64<<10), 0o600); err != nil {
		t.Fatalf("fill: %v", err)
	}
	full := 0
	for i := 0; i < 2000 && full < 5; i++ {
		st, body, err := call(ctx, c, "POST", p.url+"/v1/keys", admin, map[string]any{"name": fmt.Sprintf("fill-%d-%080d", i, i), "scopes": []string{"chat"}})
		if err != nil {
			t.Fatalf("full disk: the server is gone: %v\n%s", err, p.logs.String())
		}
		switch {
		case st == http.StatusCreated:
			var k keyCreated
			json.Unmarshal(body, &k)
			acked = append(acked, k.Key.ID)
		case st == http.StatusServiceUnavailable && errCode(body) == "storage_full":
			full++
		default:
			t.Fatalf("create key on a full disk: %d %s, want 201 or 503 storage_full", st, body)
		}
	}
	if full == 0 {
		t.Fatalf("the disk never filled after %d keys", len(acked))
	}
	t.Logf("full disk: %d keys created before the first storage_full", len(acked))
	if st, body, err := call(ctx, c, "GET", p.url+"/healthz", "", nil); err != nil || st != http.StatusOK {
		t.Errorf("healthz on a full disk: %d %v %s", st, err, body)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id, _ := mustCreate(t, c, p.url, admin, "after")
	acked = append(acked, id)
	p.kill()
	integrityCheck(t, dir)
	p = startServer(t, bin, dir)
	for _, id := range acked {
		keyRevoked(t, c, p.url, admin, id)
	}
}

package capsule_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// restartWithStrayBlob leaves a data folder holding an item's blob and a
// blob no item holds (a process stopped between writing a blob and its
// item's row), and starts a second service on it, as after a restart,
// whose sweep waits delay. It returns the service and the two blobs' paths.
func restartWithStrayBlob(t *testing.T, delay time.Duration) (svc *capsule.Service, kept, stray string) {
	t.Helper()
	ctx := context.Background()
	e := newEnv(t, false)
	up, err := e.svc.StageFile(strings.NewReader("A note about tides and the moon."))
	if err != nil {
		t.Fatal(err)
	}
	it, _, err := e.svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemFile, File: up, FileName: "tides.txt", FileType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	kept = filepath.Join(e.dir, "blobs", it.ContentHash[:2], it.ContentHash)
	stray = filepath.Join(e.dir, "blobs", "ab", strings.Repeat("ab", 32))
	if err := os.MkdirAll(filepath.Dir(stray), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stray, []byte("left by a stopped process"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.svc.Close()

	db, err := sqlite.Open(ctx, filepath.Join(e.dir, "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err = capsule.New(capsule.Config{Store: db.Capsules(), DataDir: e.dir, Workers: 1, BlobSweepDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc, kept, stray
}

// A blob no item holds is removed after Start, in the background, once
// Config.BlobSweepDelay has passed; the blob of an item is kept.
func TestStartRemovesBlobsNoItemHolds(t *testing.T) {
	t.Parallel()
	_, kept, stray := restartWithStrayBlob(t, time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(stray); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the blob no item holds is still there 30 s after Start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the item's blob: %v", err)
	}
}

// Close during the sweep's delay returns at once, without sweeping.
func TestCloseDuringBlobSweepDelay(t *testing.T) {
	t.Parallel()
	svc, kept, stray := restartWithStrayBlob(t, time.Hour)
	t0 := time.Now()
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("Close took %v during the sweep's delay", d)
	}
	for _, p := range []string{kept, stray} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v (no sweep was due)", filepath.Base(p), err)
		}
	}
}

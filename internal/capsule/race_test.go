package capsule_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// heldFakeEmbedder is a fake embedder FOR TESTS that holds every call
// embedding a text with "HOLD" until released, so that a test can change
// an item while its ingestion job works.
type heldFakeEmbedder struct {
	*capsule.FakeEmbedder
	held    chan struct{} // receives when a call is held
	release chan struct{}
	once    sync.Once
}

func (h *heldFakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "HOLD") {
			h.once.Do(func() { close(h.held) })
			select {
			case <-h.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			break
		}
	}
	return h.FakeEmbedder.Embed(ctx, texts)
}

// TestChangesWhileIngesting changes an item while its job is embedding it:
// the newer state always wins (guards on status and content hash), and the
// item ends as the change left it.
func TestChangesWhileIngesting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, svc *capsule.Service, it domain.Item)
		check  func(t *testing.T, svc *capsule.Service, it domain.Item)
	}{
		{
			name: "reindexed",
			change: func(t *testing.T, svc *capsule.Service, it domain.Item) {
				if _, err := svc.ReindexItem(ctx, "docs", it.ID); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, svc *capsule.Service, it domain.Item) {
				got, err := svc.WaitItem(ctx, "docs", it.ID, 30*time.Second)
				if err != nil || got.Status != domain.StatusReady || got.ChunkCount == 0 {
					t.Fatalf("after reindex: %+v %v", got, err)
				}
			},
		},
		{
			name: "given new content",
			change: func(t *testing.T, svc *capsule.Service, it domain.Item) {
				if _, _, err := svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemText, Text: "Fresh words about zebras.", URI: it.URI}); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, svc *capsule.Service, it domain.Item) {
				got, err := svc.WaitItem(ctx, "docs", it.ID, 30*time.Second)
				if err != nil || got.Status != domain.StatusReady {
					t.Fatalf("after update: %+v %v", got, err)
				}
				if _, text, err := svc.ItemText(ctx, "docs", it.ID); err != nil || !strings.Contains(text, "zebras") {
					t.Fatalf("text after update: %q %v", text, err)
				}
			},
		},
		{
			name: "deleted",
			change: func(t *testing.T, svc *capsule.Service, it domain.Item) {
				if err := svc.DeleteItem(ctx, "docs", it.ID); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, svc *capsule.Service, it domain.Item) {
				time.Sleep(500 * time.Millisecond) // the held job finishes
				if _, err := svc.GetItem(ctx, "docs", it.ID); err == nil {
					t.Fatal("a deleted item came back")
				}
				if c, err := svc.GetCapsule(ctx, "docs"); err != nil || c.ChunkCount != 0 || c.ItemCount != 0 {
					t.Fatalf("capsule after delete: %+v %v", c, err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db, err := sqlite.Open(ctx, dir+"/capsuled.db")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			emb := &heldFakeEmbedder{FakeEmbedder: capsule.NewFakeEmbedder(16), held: make(chan struct{}), release: make(chan struct{})}
			svc, err := capsule.New(capsule.Config{Store: db.Capsules(), Embedder: emb, DataDir: dir, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			if _, err := svc.CreateCapsule(ctx, "docs", ""); err != nil {
				t.Fatal(err)
			}
			it, _, err := svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemText, Text: "HOLD these words.", URI: "u1"})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-emb.held:
			case <-time.After(30 * time.Second):
				t.Fatal("the job did not reach the embedder")
			}
			tc.change(t, svc, it)
			close(emb.release)
			tc.check(t, svc, it)
		})
	}
}

// TestIngestionBounds (issue 15, attack 7): an item whose ingestion runs
// over the job time limit, or that yields more chunks than the limit, fails
// with a reason instead of holding a worker.
func TestIngestionBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, dir+"/capsuled.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The held embedder never returns for "HOLD" until the job's time is up.
	// The limit is long enough for the ordinary items below to finish well
	// inside it on a loaded machine under -race (300 ms did not always).
	emb := &heldFakeEmbedder{FakeEmbedder: capsule.NewFakeEmbedder(16), held: make(chan struct{}), release: make(chan struct{})}
	svc, err := capsule.New(capsule.Config{Store: db.Capsules(), Embedder: emb, DataDir: dir, Workers: 2,
		JobTimeout: 5 * time.Second, MaxChunksPerItem: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(emb.release); svc.Close() })
	if _, err := svc.CreateCapsule(ctx, "docs", ""); err != nil {
		t.Fatal(err)
	}
	slow, _, err := svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemText, Text: "HOLD these words.", URI: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.WaitItem(ctx, "docs", slow.ID, 30*time.Second)
	if err != nil || got.Status != domain.StatusFailed || !strings.Contains(got.Error, "longer than the limit") {
		t.Fatalf("slow item: %+v %v", got, err)
	}
	var long strings.Builder
	for i := range 400 {
		long.WriteString("Paragraph " + strings.Repeat("word ", 60) + string(rune('a'+i%26)) + ".\n\n")
	}
	big, _, err := svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemText, Text: long.String(), URI: "big"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = svc.WaitItem(ctx, "docs", big.ID, 30*time.Second)
	if err != nil || got.Status != domain.StatusFailed || !strings.Contains(got.Error, "chunks, more than the limit of 3") {
		t.Fatalf("item of many chunks: %+v %v", got, err)
	}
	// An ordinary item is still indexed.
	ok, _, err := svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemText, Text: "A short note.", URI: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := svc.WaitItem(ctx, "docs", ok.ID, 30*time.Second); err != nil || got.Status != domain.StatusReady {
		t.Fatalf("ordinary item: %+v %v", got, err)
	}
}

package capsule_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

type env struct {
	svc *capsule.Service
	emb *capsule.FakeEmbedder
	dir string
}

func newEnv(t *testing.T, withEmbedder bool) env {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := env{dir: dir}
	cfg := capsule.Config{Store: db.Capsules(), DataDir: dir, Workers: 2}
	if withEmbedder {
		e.emb = capsule.NewFakeEmbedder(32)
		cfg.Embedder = e.emb
	}
	e.svc, err = capsule.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.svc.Close() })
	if _, err := e.svc.CreateCapsule(context.Background(), "docs", ""); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e env) add(t *testing.T, in capsule.NewItem) domain.Item {
	t.Helper()
	ctx := context.Background()
	if in.Kind == "" {
		in.Kind = domain.ItemText
	}
	it, _, err := e.svc.AddItem(ctx, "docs", in)
	if err != nil {
		t.Fatal(err)
	}
	it, err = e.svc.WaitItem(ctx, "docs", it.ID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestIngestAndQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, semantic := range []bool{false, true} {
		t.Run(fmt.Sprint("semantic=", semantic), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, semantic)
			it := e.add(t, capsule.NewItem{Text: "Paris is the capital of France.\n\nBerlin is the capital of Germany.", URI: "geo"})
			if it.Status != domain.StatusReady || it.ChunkCount < 1 {
				t.Fatalf("item %+v", it)
			}
			modes := []domain.SearchMode{domain.ModeKeyword, domain.ModeHybrid}
			if semantic {
				modes = append(modes, domain.ModeSemantic)
			}
			for _, m := range modes {
				hits, err := e.svc.Query(ctx, "docs", domain.Query{Text: "capital of France", Wishlist: domain.Wishlist{Mode: m}})
				if err != nil || len(hits) == 0 || hits[0].Item.ID != it.ID || hits[0].Score <= 0 || hits[0].Score > 1 {
					t.Fatalf("%s: %+v %v", m, hits, err)
				}
			}
			_, err := e.svc.Query(ctx, "docs", domain.Query{Text: "x", Wishlist: domain.Wishlist{Mode: domain.ModeSemantic}})
			if semantic != (err == nil) {
				t.Fatalf("semantic query: %v", err)
			}
			if !semantic && domain.KindOf(err) != domain.KindUnprocessable {
				t.Fatalf("semantic off: %v", err)
			}
		})
	}
}

func TestCacheNeverEmbedsTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	e.add(t, capsule.NewItem{Text: "one chunk of text", URI: "a"})
	n := e.emb.Calls()
	e.add(t, capsule.NewItem{Text: "one chunk of text", URI: "b"}) // same text elsewhere
	it := e.add(t, capsule.NewItem{Text: "one chunk of text", URI: "a"})
	if _, err := e.svc.ReindexItem(context.Background(), "docs", it.ID); err != nil {
		t.Fatal(err)
	}
	e.svc.WaitItem(context.Background(), "docs", it.ID, 10*time.Second)
	if got := e.emb.Calls(); got != n {
		t.Fatalf("embedded %d more texts, want 0", got-n)
	}
}

func TestFiltersKeepLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, true)
	// 30 items about apples, only every third tagged keep; the kept ones rank low.
	for i := range 30 {
		text := strings.Repeat("apple ", 1+(30-i)) + fmt.Sprintf("item %d", i)
		meta := map[string]any{"n": float64(i)}
		if i%3 == 0 {
			meta["keep"] = true
		}
		e.add(t, capsule.NewItem{Text: text, URI: fmt.Sprint("u", i), Metadata: meta})
	}
	for _, m := range []domain.SearchMode{domain.ModeKeyword, domain.ModeSemantic, domain.ModeHybrid} {
		hits, err := e.svc.Query(ctx, "docs", domain.Query{Text: "apple", Limit: 10, Wishlist: domain.Wishlist{
			Mode: m, Metadata: []domain.MetadataFilter{{Key: "keep", Op: domain.OpExists, Value: true}},
		}})
		if err != nil || len(hits) != 10 {
			t.Fatalf("%s: %d hits, %v", m, len(hits), err)
		}
		for _, h := range hits {
			if h.Item.Metadata["keep"] != true {
				t.Fatalf("%s: unfiltered hit %v", m, h.Item.Metadata)
			}
		}
	}
	hits, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "apple", Limit: 100, Wishlist: domain.Wishlist{
		Metadata: []domain.MetadataFilter{{Key: "n", Op: domain.OpGte, Value: 10.0}, {Key: "n", Op: domain.OpLt, Value: 12.0}}}})
	if len(hits) != 2 {
		t.Fatalf("numeric range: %d", len(hits))
	}
}

func TestDeterministicTies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, true)
	for i := range 5 {
		e.add(t, capsule.NewItem{Text: "identical words here", URI: fmt.Sprint(i), Metadata: map[string]any{"i": float64(i)}})
	}
	a, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "identical words"})
	for range 3 {
		b, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "identical words"})
		for i := range a {
			if a[i].Item.ID != b[i].Item.ID || a[i].Score != b[i].Score {
				t.Fatal("order changed between runs")
			}
		}
	}
	for i := 1; i < len(a); i++ {
		if a[i].Score == a[i-1].Score && a[i].Item.ID < a[i-1].Item.ID {
			t.Fatalf("tie not broken by item id: %s before %s", a[i-1].Item.ID, a[i].Item.ID)
		}
	}
}

func TestMaxChunksPerItemAndMinScore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, false)
	long := strings.Repeat("Rivers flow to the sea. ", 400)
	e.add(t, capsule.NewItem{Text: long, URI: "long"})
	e.add(t, capsule.NewItem{Text: "Rivers are long.", URI: "short"})
	hits, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "rivers", Limit: 10, Wishlist: domain.Wishlist{MaxChunksPerItem: 1}})
	if len(hits) != 2 {
		t.Fatalf("max_chunks_per_item: %d hits", len(hits))
	}
	all, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "rivers", Limit: 10})
	if len(all) <= 2 {
		t.Fatalf("without cap: %d hits", len(all))
	}
	cut := all[1].Score
	some, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "rivers", Limit: 10, Wishlist: domain.Wishlist{MinScore: cut}})
	for _, h := range some {
		if h.Score < cut {
			t.Fatalf("score %v below min %v", h.Score, cut)
		}
	}
}

func TestDeleteRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, true)
	it := e.add(t, capsule.NewItem{Text: "unique zebra text", URI: "z"})
	blob := filepath.Join(e.dir, "blobs", it.ContentHash[:2], it.ContentHash)
	if _, err := os.Stat(blob); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteItem(ctx, "docs", it.ID); err != nil {
		t.Fatal(err)
	}
	if hits, _ := e.svc.Query(ctx, "docs", domain.Query{Text: "zebra"}); len(hits) != 0 {
		t.Fatalf("deleted item found: %+v", hits)
	}
	if _, err := os.Stat(blob); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("blob kept: %v", err)
	}
	e.add(t, capsule.NewItem{Text: "another zebra", URI: "z2"})
	if err := e.svc.DeleteCapsule(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Query(ctx, "docs", domain.Query{Text: "zebra"}); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("query deleted capsule: %v", err)
	}
}

func TestFileItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, false)
	cases := []struct {
		name, mime string
		body       string
		status     domain.ItemStatus
	}{
		{"notes.md", "", "# Title\n\nSome *markdown* words.", domain.StatusReady},
		{"page.html", "", "<html><body><h1>Hi</h1><p>html words</p></body></html>", domain.StatusReady},
		{"data.csv", "", "name,age\nann,3\nbob,4\n", domain.StatusReady},
		{"data.json", "", `{"a": {"b": "json words"}}`, domain.StatusReady},
		{"main.go", "", "package main\n\nfunc main() {}\n", domain.StatusReady},
		{"bad.pdf", "application/pdf", "%PDF-1.4 nonsense", domain.StatusFailed},
		{"blob.bin", "", "\x00\x01\x02\x03\xff\xfe", domain.StatusFailed},
	}
	for _, c := range cases {
		up, err := e.svc.StageFile(strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		it, created, err := e.svc.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemFile, File: up, FileName: c.name, FileType: c.mime})
		if err != nil || !created {
			t.Fatalf("%s: %v", c.name, err)
		}
		it, _ = e.svc.WaitItem(ctx, "docs", it.ID, 10*time.Second)
		if it.Status != c.status {
			t.Fatalf("%s (%s): status %s, error %q", c.name, it.FileType, it.Status, it.Error)
		}
		if it.Status == domain.StatusFailed && it.Error == "" {
			t.Fatalf("%s: failed without a reason", c.name)
		}
	}
}

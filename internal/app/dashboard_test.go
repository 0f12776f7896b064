package app

import (
	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEngineStatus(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(up.Close)

	builtin := (&App{}).engineStatus(context.Background())
	if len(builtin) != 2 || builtin[0].Kind != "builtin" || !builtin[0].OK || builtin[1].Kind != "builtin" || !builtin[1].OK {
		t.Fatalf("builtin engines: %+v", builtin)
	}

	a := &App{cfg: Config{
		Chat:   ChatConfig{Engine: "upstream", UpstreamURL: up.URL + "/v1", UpstreamKey: "k"},
		Memory: MemoryConfig{UpstreamURL: "http://127.0.0.1:1/v1"},
	}}
	got := a.engineStatus(context.Background())
	if !got[0].OK || got[0].Kind != "upstream" || got[0].URL != up.URL+"/v1" {
		t.Errorf("healthy svc-1 upstream: %+v", got[0])
	}
	if got[1].OK || got[1].Detail == "" {
		t.Errorf("unreachable memory upstream: %+v", got[1])
	}
	a.cfg.Chat.UpstreamKey = "wrong"
	if got := a.engineStatus(context.Background()); got[0].OK {
		t.Errorf("refused upstream reported healthy: %+v", got[0])
	}
}

// TestVectorCheck: the status page's vectors row tells of items without
// vectors, with and without a model (the FAKE embedder stands in for a
// model: only the row's wording is under test).
func TestVectorCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	off, err := capsule.New(capsule.Config{Store: db.Capsules(), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if c := vectorCheck(ctx, off); !c.OK || c.Detail != "no embedding model: keyword search only" {
		t.Fatalf("no model, no items: %+v", c)
	}
	if err := off.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := off.CreateCapsule(ctx, "docs", ""); err != nil {
		t.Fatal(err)
	}
	it, _, err := off.AddItem(ctx, "docs", capsule.NewItem{Kind: domain.ItemText, Text: "tides rise and fall"})
	if err != nil {
		t.Fatal(err)
	}
	if it, err = off.WaitItem(ctx, "docs", it.ID, time.Minute); err != nil || it.Status != domain.StatusReady {
		t.Fatalf("item %+v %v", it, err)
	}
	off.Close()
	if c := vectorCheck(ctx, off); !c.OK || !strings.HasPrefix(c.Detail, "1 items (1 chunks) have no vectors") {
		t.Fatalf("no model, an item without vectors: %+v", c)
	}
	// With a model, before its job has run (not started here).
	on, err := capsule.New(capsule.Config{Store: db.Capsules(), DataDir: dir, Embedder: capsule.NewFakeEmbedder(8)})
	if err != nil {
		t.Fatal(err)
	}
	if c := vectorCheck(ctx, on); !c.OK || !strings.HasPrefix(c.Detail, "embedding 1 items (1 chunks) without vectors in the background") {
		t.Fatalf("a model, an item without vectors: %+v", c)
	}
	if _, err := on.Reindex(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if c := vectorCheck(ctx, on); !c.OK || c.Detail != `every searchable item has vectors of "fake-hash-embedder" (8 dimensions)` {
		t.Fatalf("every item with vectors: %+v", c)
	}
}

package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
	"capsuled/internal/store/sqlite"
	"capsuled/internal/storetest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	storetest.MemoryStore(t, func(t *testing.T) memory.Store { return openFresh(t).Memory() })
}

func TestMemoriesSurviveReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "capsuled.db")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Memory().InsertMemories(ctx, []domain.MemoryRecord{{Memory: domain.Memory{
		ID: "mem_keep", Namespace: "ns", Kind: domain.MemoryNote, Content: "remember the lighthouse", CreatedAt: at, UpdatedAt: at, ValidFrom: at,
	}, Vector: []float32{1, 2}, VectorModel: "m"}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := db.Memory().GetMemory(ctx, "ns", "mem_keep")
	if err != nil || m.Content != "remember the lighthouse" {
		t.Fatalf("after reopen: %+v %v", m, err)
	}
	hits, err := db.Memory().SearchText(ctx, "ns", "lighthouse", 5, domain.LiveFilter{Now: at})
	if err != nil || len(hits) != 1 {
		t.Fatalf("index after reopen: %+v %v", hits, err)
	}
}

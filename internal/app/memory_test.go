package app

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"capsuled/internal/memory"
)

// TestOneEmbedder checks that the capsule and memory services share one
// embedder: newEmbedder runs once per app, and the memory service holds
// the embedder the app built.
func TestOneEmbedder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		embedder string
		wantNil  bool
	}{
		{"fake", "fake", false},
		{"off", "off", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := Config{DataDir: t.TempDir(), Store: "sqlite", Capsules: CapsulesConfig{Embedder: tt.embedder}}
			a, err := New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.Close() })
			if a.embeds.built != 1 {
				t.Fatalf("embedders built = %d, want 1", a.embeds.built)
			}
			if (a.embeds.emb == nil) != tt.wantNil {
				t.Fatalf("embedder = %v, want nil %v", a.embeds.emb, tt.wantNil)
			}
			// A further service asks again: it gets the same embedder and
			// nothing new is built.
			mem, _, err := a.newMemory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			svc, ok := mem.(*memory.Service)
			if !ok {
				t.Fatalf("memory service is %T", mem)
			}
			if a.embeds.built != 1 {
				t.Fatalf("embedders built after a second service = %d, want 1", a.embeds.built)
			}
			if tt.wantNil {
				if svc.Embedder() != nil {
					t.Fatalf("memory embedder = %v, want none", svc.Embedder())
				}
				return
			}
			if svc.Embedder() != memory.Embedder(a.embeds.emb) {
				t.Fatalf("memory embedder %p is not the app's %p", svc.Embedder(), a.embeds.emb)
			}
		})
	}
}

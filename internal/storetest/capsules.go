package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
)

// CapsuleStore runs the capsule.Store suite against fresh stores made by
// newStore.
func CapsuleStore(t *testing.T, newStore func(t *testing.T) capsule.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	setup := func(t *testing.T, capsules ...string) capsule.Store {
		st := newStore(t)
		for _, c := range capsules {
			if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	item := func(capsule, id, uri, hash string) domain.Item {
		return domain.Item{ID: id, Capsule: capsule, Kind: domain.ItemText, URI: uri, Size: 5, ContentHash: hash,
			Metadata: map[string]any{"lang": "en"}, TimeAdded: t0, TimeUpdated: t0, Status: domain.StatusQueued}
	}
	chunks := func(texts ...string) []domain.Chunk {
		out := make([]domain.Chunk, len(texts))
		for i, tx := range texts {
			out[i] = domain.Chunk{Idx: i, Text: tx, Start: 0, End: len(tx), Tokens: 3, Vector: []float32{float32(i), 1}}
		}
		return out
	}
	// index starts the longest-queued item, as its job does, and completes
	// it with chunks.
	index := func(t *testing.T, st capsule.Store, texts ...string) domain.Item {
		t.Helper()
		it, err := startQueued(ctx, st, t0)
		if err != nil {
			t.Fatal(err)
		}
		done, err := st.CompleteItem(ctx, it.ID, it.ContentHash, "full text", chunks(texts...), t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	keyword := func(t *testing.T, st capsule.Store, capsule string, terms ...string) []string {
		t.Helper()
		var out []string
		err := st.Keyword(ctx, capsule, terms, func(id string, idx int, score float64) bool {
			if score <= 0 {
				t.Errorf("bm25 score %v, want > 0", score)
			}
			out = append(out, fmt.Sprintf("%s/%d", id, idx))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("Capsules", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs", "alpha")
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: "docs", CreatedAt: t0}); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("duplicate: %v, want ErrConflict", err)
		}
		list, err := st.ListCapsules(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "docs" {
			t.Fatalf("list: %+v %v", list, err)
		}
		if _, err := st.GetCapsule(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}
		if ok, err := st.HasCapsule(ctx, "docs"); !ok || err != nil {
			t.Fatalf("has docs: %v %v", ok, err)
		}
		if ok, err := st.HasCapsule(ctx, "nope"); ok || err != nil {
			t.Fatalf("has missing: %v %v", ok, err)
		}
		if _, err := st.DeleteCapsule(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("delete missing: %v", err)
		}
	})

	t.Run("PutItemCreatesUpdatesAndDedupes", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		it, created, err := st.PutItem(ctx, item("docs", "itm_1", "u1", "h1"))
		if err != nil || !created || it.Status != domain.StatusQueued || it.Metadata["lang"] != "en" {
			t.Fatalf("create: %+v %v %v", it, created, err)
		}
		index(t, st, "alpha beta")
		// Same content, new metadata: no reindex.
		same := item("docs", "itm_2", "u1", "h1")
		same.Metadata = map[string]any{"lang": "de"}
		it, created, err = st.PutItem(ctx, same)
		if err != nil || created || it.ID != "itm_1" || it.Status != domain.StatusReady || it.Metadata["lang"] != "de" {
			t.Fatalf("same content: %+v %v %v", it, created, err)
		}
		// New content: queued again, old chunks still searchable.
		it, created, err = st.PutItem(ctx, item("docs", "itm_3", "u1", "h2"))
		if err != nil || created || it.ID != "itm_1" || it.Status != domain.StatusQueued || it.ContentHash != "h2" {
			t.Fatalf("new content: %+v %v %v", it, created, err)
		}
		if got := keyword(t, st, "docs", "alpha"); len(got) != 1 {
			t.Fatalf("old chunks while requeued: %v", got)
		}
		index(t, st, "gamma", "delta")
		if got := keyword(t, st, "docs", "alpha"); len(got) != 0 {
			t.Fatalf("old chunks after swap: %v", got)
		}
		if got := keyword(t, st, "docs", "gamma", "delta"); len(got) != 2 {
			t.Fatalf("new chunks: %v", got)
		}
		if _, _, err := st.PutItem(ctx, item("nope", "itm_4", "u", "h")); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("missing capsule: %v", err)
		}
	})

	t.Run("FindItemByURIThenContent", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs", "other")
		for _, it := range []domain.Item{
			item("docs", "itm_1", "u1", "h1"),
			item("docs", "itm_2", "u2", "h2"),
			item("docs", "itm_3", "u3", "h2"), // the same bytes again (added before identity)
			item("other", "itm_4", "u4", "h4"),
		} {
			if _, _, err := st.PutItem(ctx, it); err != nil {
				t.Fatal(err)
			}
		}
		file := item("docs", "itm_5", "f", "h5")
		file.Kind, file.FileType = domain.ItemFile, "text/markdown"
		if _, _, err := st.PutItem(ctx, file); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			capsule, uri string
			kind         domain.ItemKind
			fileType     string
			hash, want   string
		}{
			{"docs", "u1", domain.ItemText, "", "h9", "itm_1"},  // the uri, whatever the content
			{"docs", "u1", domain.ItemText, "", "h2", "itm_1"},  // the uri before the content
			{"docs", "new", domain.ItemText, "", "h2", "itm_2"}, // the oldest item with the bytes
			{"docs", "new", domain.ItemFile, "text/markdown", "h5", "itm_5"},
			{"docs", "new", domain.ItemFile, "text/plain", "h5", ""}, // the bytes read as another type
			{"docs", "new", domain.ItemText, "", "h5", ""},           // the bytes under another kind
			{"docs", "new", domain.ItemText, "", "h4", ""},           // the bytes in another capsule
			{"docs", "u4", domain.ItemText, "", "h9", ""},
			{"nope", "u1", domain.ItemText, "", "h1", ""},
		} {
			got, err := st.FindItem(ctx, c.capsule, c.uri, c.kind, c.fileType, c.hash)
			if c.want == "" {
				if !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("FindItem(%+v) = %s %v, want ErrNotFound", c, got.ID, err)
				}
				continue
			}
			if err != nil || got.ID != c.want || got.Capsule != c.capsule {
				t.Errorf("FindItem(%+v) = %+v %v, want %s", c, got, err, c.want)
			}
		}
	})

	t.Run("EmbeddingSpaceAndMissingVectors", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		if sp, err := st.EmbeddingSpace(ctx); err != nil || sp != (domain.EmbeddingSpace{}) {
			t.Fatalf("space of a new store: %+v %v", sp, err)
		}
		// One item with vectors (width 2), one ingested without a model.
		if _, _, err := st.PutItem(ctx, item("docs", "itm_1", "u1", "h1")); err != nil {
			t.Fatal(err)
		}
		withVecs := index(t, st, "alpha", "beta")
		if _, _, err := st.PutItem(ctx, item("docs", "itm_2", "u2", "h2")); err != nil {
			t.Fatal(err)
		}
		bare, err := startQueued(ctx, st, t0)
		if err != nil {
			t.Fatal(err)
		}
		plain := chunks("gamma", "delta", "epsilon")
		for i := range plain {
			plain[i].Vector = nil
		}
		if _, err := st.CompleteItem(ctx, bare.ID, bare.ContentHash, "full text", plain, t0); err != nil {
			t.Fatal(err)
		}
		backlog := func(wantItems, wantChunks int) {
			t.Helper()
			if items, chunks, err := st.VectorBacklog(ctx); err != nil || items != wantItems || chunks != wantChunks {
				t.Fatalf("backlog %d items %d chunks (%v), want %d %d", items, chunks, err, wantItems, wantChunks)
			}
		}
		backlog(1, 3)
		// Recording a space without one recorded keeps vectors of its width.
		sp := domain.EmbeddingSpace{Model: "m1", Dimensions: 2}
		if removed, err := st.UseEmbeddingSpace(ctx, sp, t0); err != nil || removed != 0 {
			t.Fatalf("adopt: %d %v", removed, err)
		}
		if got, err := st.EmbeddingSpace(ctx); err != nil || got != sp {
			t.Fatalf("space %+v %v", got, err)
		}
		if removed, err := st.UseEmbeddingSpace(ctx, sp, t0); err != nil || removed != 0 {
			t.Fatalf("same space again: %d %v", removed, err)
		}
		missing, err := st.ItemsWithoutVectors(ctx, "", 10)
		if err != nil || len(missing) != 1 || missing[0].ID != bare.ID {
			t.Fatalf("items without vectors: %+v %v", missing, err)
		}
		if more, err := st.ItemsWithoutVectors(ctx, bare.ID, 10); err != nil || len(more) != 0 {
			t.Fatalf("after the last: %+v %v", more, err)
		}
		got, err := st.ItemChunks(ctx, bare.ID)
		if err != nil || len(got) != 3 || got[1].Text != "delta" || got[1].Idx != 1 || got[1].Vector != nil {
			t.Fatalf("chunks of the bare item: %+v %v", got, err)
		}
		if got, err := st.ItemChunks(ctx, withVecs.ID); err != nil || len(got) != 2 || len(got[1].Vector) != 2 {
			t.Fatalf("chunks with vectors: %+v %v", got, err)
		}
		for i := range got {
			got[i].Vector = []float32{1, float32(i)}
		}
		if _, err := st.SetChunkVectors(ctx, bare.ID, "other-hash", got); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("vectors for other content: %v, want ErrConflict", err)
		}
		done, err := st.SetChunkVectors(ctx, bare.ID, bare.ContentHash, got)
		if err != nil || done.ID != bare.ID || done.Status != domain.StatusReady {
			t.Fatalf("set vectors: %+v %v", done, err)
		}
		backlog(0, 0)
		vecs := 0
		if err := st.ChunkVectors(ctx, "docs", func(id string, idx int, v []float32) error {
			vecs++
			return nil
		}); err != nil || vecs != 5 {
			t.Fatalf("%d vectors searchable (%v), want 5", vecs, err)
		}
		// A queued item's chunks wait for its ingestion, not for this.
		if _, err := st.RequeueItem(ctx, "docs", bare.ID, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetChunkVectors(ctx, bare.ID, bare.ContentHash, got); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("vectors of a queued item: %v, want ErrConflict", err)
		}
		// Another model: every vector goes, in the transaction that
		// records it.
		other := domain.EmbeddingSpace{Model: "m2", Dimensions: 3}
		if removed, err := st.UseEmbeddingSpace(ctx, other, t0); err != nil || removed != 5 {
			t.Fatalf("change of model removed %d (%v), want 5", removed, err)
		}
		backlog(1, 2) // the ready item; the queued one gets its vectors from its job
		if got, err := st.EmbeddingSpace(ctx); err != nil || got != other {
			t.Fatalf("space %+v %v", got, err)
		}
	})

	t.Run("AdoptingASpaceDropsVectorsOfAnotherWidth", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		if _, _, err := st.PutItem(ctx, item("docs", "itm_1", "u1", "h1")); err != nil {
			t.Fatal(err)
		}
		index(t, st, "alpha", "beta")
		if removed, err := st.UseEmbeddingSpace(ctx, domain.EmbeddingSpace{Model: "m", Dimensions: 384}, t0); err != nil || removed != 2 {
			t.Fatalf("adopt: removed %d (%v), want 2", removed, err)
		}
		if items, chunks, err := st.VectorBacklog(ctx); err != nil || items != 1 || chunks != 2 {
			t.Fatalf("backlog %d %d %v", items, chunks, err)
		}
	})

	// Items without vectors are listed a page at a time, in id order, the
	// ready ones only, each once however many of its chunks lack one.
	t.Run("ItemsWithoutVectorsInPages", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		var want []string
		for i := range 7 {
			id, n := fmt.Sprintf("itm_%d", i), fmt.Sprint(i)
			if _, _, err := st.PutItem(ctx, item("docs", id, "u"+n, "h"+n)); err != nil {
				t.Fatal(err)
			}
			if i == 5 {
				continue // queued: not ready
			}
			it, err := startQueued(ctx, st, t0)
			if err != nil {
				t.Fatal(err)
			}
			cs := chunks("one", "two", "three")
			if i%3 != 0 {
				for j := range cs {
					cs[j].Vector = nil
				}
				want = append(want, it.ID)
			}
			if _, err := st.CompleteItem(ctx, it.ID, it.ContentHash, "full text", cs, t0); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for after := ""; ; {
			page, err := st.ItemsWithoutVectors(ctx, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			if len(page) > 2 {
				t.Fatalf("a page of %d items, limit 2", len(page))
			}
			for _, it := range page {
				if it.Status != domain.StatusReady || it.Capsule != "docs" {
					t.Fatalf("listed %+v", it)
				}
				got = append(got, it.ID)
			}
			after = page[len(page)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("items without vectors %v, want %v", got, want)
		}
		if items, chunks, err := st.VectorBacklog(ctx); err != nil || items != len(want) || chunks != 3*len(want) {
			t.Fatalf("backlog %d items %d chunks (%v), want %d %d", items, chunks, err, len(want), 3*len(want))
		}
	})

	t.Run("CompleteIsAtomicAndGuarded", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		if _, _, err := st.PutItem(ctx, item("docs", "itm_1", "u1", "h1")); err != nil {
			t.Fatal(err)
		}
		claimed, err := startQueued(ctx, st, t0)
		if err != nil || claimed.Status != domain.StatusIndexing {
			t.Fatalf("start: %+v %v", claimed, err)
		}
		if _, err := startQueued(ctx, st, t0); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("still queued: %v", err)
		}
		if got := keyword(t, st, "docs", "alpha"); len(got) != 0 {
			t.Fatalf("searchable before ready: %v", got)
		}
		// The item changes while it is being indexed: completion is refused.
		if _, _, err := st.PutItem(ctx, item("docs", "x", "u1", "h2")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CompleteItem(ctx, claimed.ID, "h1", "t", chunks("alpha"), t0); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("stale complete: %v", err)
		}
		if _, err := st.FailItem(ctx, claimed.ID, "h1", "x", t0); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("stale fail: %v", err)
		}
		if got := keyword(t, st, "docs", "alpha"); len(got) != 0 {
			t.Fatalf("stale chunks written: %v", got)
		}
		done := index(t, st, "alpha one", "alpha two")
		if done.Status != domain.StatusReady || done.ChunkCount != 2 {
			t.Fatalf("ready: %+v", done)
		}
		if text, err := st.ItemText(ctx, "docs", done.ID); err != nil || text != "full text" {
			t.Fatalf("text: %q %v", text, err)
		}
		c, _ := st.GetCapsule(ctx, "docs")
		if c.ItemCount != 1 || c.ChunkCount != 2 {
			t.Fatalf("counts: %+v", c)
		}
	})

	t.Run("FailRemovesChunks", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		if _, _, err := st.PutItem(ctx, item("docs", "itm_1", "u1", "h1")); err != nil {
			t.Fatal(err)
		}
		index(t, st, "alpha")
		if _, _, err := st.PutItem(ctx, item("docs", "x", "u1", "h2")); err != nil {
			t.Fatal(err)
		}
		it, _ := startQueued(ctx, st, t0)
		failed, err := st.FailItem(ctx, it.ID, "h2", "corrupt PDF", t0)
		if err != nil || failed.Status != domain.StatusFailed || failed.Error != "corrupt PDF" || failed.ChunkCount != 0 {
			t.Fatalf("fail: %+v %v", failed, err)
		}
		if got := keyword(t, st, "docs", "alpha"); len(got) != 0 {
			t.Fatalf("chunks of failed item: %v", got)
		}
		if _, err := st.ItemText(ctx, "docs", it.ID); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("text of failed item: %v", err)
		}
	})

	t.Run("StartItemGuards", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		if _, _, err := st.PutItem(ctx, item("docs", "itm_1", "u1", "h1")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StartItem(ctx, "itm_1", "h0", t0); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("job of other content: %v", err)
		}
		if _, err := st.StartItem(ctx, "itm_none", "h1", t0); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("job of a deleted item: %v", err)
		}
		it, err := st.StartItem(ctx, "itm_1", "h1", t0)
		if err != nil || it.Status != domain.StatusIndexing || it.Capsule != "docs" || it.URI != "u1" {
			t.Fatalf("start: %+v %v", it, err)
		}
		// The job's process died; the job runs again and starts the item
		// again.
		if it, err = st.StartItem(ctx, "itm_1", "h1", t0); err != nil || it.Status != domain.StatusIndexing {
			t.Fatalf("start again: %+v %v", it, err)
		}
		if _, err := st.CompleteItem(ctx, "itm_1", "h1", "t", chunks("alpha"), t0); err != nil {
			t.Fatal(err)
		}
		// A duplicate job of done content has nothing to do.
		if _, err := st.StartItem(ctx, "itm_1", "h1", t0); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("job of done content: %v", err)
		}
		// Reindexing queues it again.
		if it, err = st.RequeueItem(ctx, "docs", "itm_1", t0); err != nil || it.Status != domain.StatusQueued {
			t.Fatalf("requeue: %+v %v", it, err)
		}
		if it, err = st.StartItem(ctx, "itm_1", "h1", t0); err != nil || it.Status != domain.StatusIndexing {
			t.Fatalf("start after requeue: %+v %v", it, err)
		}
		if _, err := st.RequeueItem(ctx, "docs", "itm_none", t0); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("requeue of a missing item: %v", err)
		}
	})

	t.Run("KeywordStaysInCapsule", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "a", "b")
		st.PutItem(ctx, item("a", "itm_a", "u", "h1"))
		index(t, st, "shared word running")
		st.PutItem(ctx, item("b", "itm_b", "u", "h1"))
		index(t, st, "shared word")
		if got := keyword(t, st, "a", "shared"); len(got) != 1 || got[0] != "itm_a/0" {
			t.Fatalf("capsule a: %v", got)
		}
		if got := keyword(t, st, "a", "run"); len(got) != 1 {
			t.Fatalf("stemming: %v", got)
		}
		if got := keyword(t, st, "b", `"quoted" OR x`, "NEAR("); len(got) != 0 {
			t.Fatalf("syntax in terms: %v", got)
		}
		if err := st.Keyword(ctx, "missing", []string{"x"}, func(string, int, float64) bool { return true }); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("missing capsule: %v", err)
		}
	})

	t.Run("DeleteItemAndCapsule", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs", "other")
		st.PutItem(ctx, item("docs", "itm_1", "u1", "h1"))
		index(t, st, "alpha")
		st.PutItem(ctx, item("docs", "itm_2", "u2", "h2"))
		index(t, st, "alpha")
		st.PutItem(ctx, item("other", "itm_3", "u1", "h3"))
		index(t, st, "alpha")
		if _, err := st.DeleteItem(ctx, "other", "itm_1"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("delete in wrong capsule: %v", err)
		}
		if _, err := st.DeleteItem(ctx, "docs", "itm_1"); err != nil {
			t.Fatal(err)
		}
		if got := keyword(t, st, "docs", "alpha"); len(got) != 1 {
			t.Fatalf("after item delete: %v", got)
		}
		if used, _ := st.HashInUse(ctx, "h1"); used {
			t.Fatal("h1 still in use")
		}
		hashes, err := st.DeleteCapsule(ctx, "docs")
		if err != nil || len(hashes) != 1 || hashes[0] != "h2" {
			t.Fatalf("delete capsule: %v %v", hashes, err)
		}
		if ok, err := st.HasCapsule(ctx, "docs"); ok || err != nil {
			t.Fatalf("has a deleted capsule: %v %v", ok, err)
		}
		if got := keyword(t, st, "other", "alpha"); len(got) != 1 {
			t.Fatalf("other capsule touched: %v", got)
		}
		n := 0
		st.ChunkVectors(ctx, "other", func(string, int, []float32) error { n++; return nil })
		if n != 1 {
			t.Fatalf("vectors: %d", n)
		}
	})

	t.Run("ListItemsPages", func(t *testing.T) {
		t.Parallel()
		st := setup(t, "docs")
		for i := range 5 {
			st.PutItem(ctx, item("docs", fmt.Sprintf("itm_%d", i), fmt.Sprint(i), "h"))
		}
		page, err := st.ListItems(ctx, "docs", "", "", 2)
		if err != nil || len(page) != 2 || page[0].ID != "itm_4" || page[1].ID != "itm_3" {
			t.Fatalf("page 1: %v %v", page, err)
		}
		page, _ = st.ListItems(ctx, "docs", "", page[1].ID, 10)
		if len(page) != 3 || page[0].ID != "itm_2" {
			t.Fatalf("page 2: %v", page)
		}
		if _, err := st.ListItems(ctx, "nope", "", "", 2); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("missing capsule: %v", err)
		}
	})

	t.Run("EmbeddingCache", func(t *testing.T) {
		t.Parallel()
		st := setup(t)
		h1, h2 := [32]byte{1}, [32]byte{2}
		if err := st.CacheVectors(ctx, "m", map[[32]byte][]float32{h1: {0.5, -1.25}}); err != nil {
			t.Fatal(err)
		}
		got, err := st.CachedVectors(ctx, "m", [][32]byte{h1, h2})
		if err != nil || len(got) != 1 || got[h1][1] != -1.25 {
			t.Fatalf("cached: %v %v", got, err)
		}
		if got, _ := st.CachedVectors(ctx, "other-model", [][32]byte{h1}); len(got) != 0 {
			t.Fatalf("other model: %v", got)
		}
	})
}

// startQueued starts the longest-queued item of any capsule, as its
// ingestion job does (ErrNotFound: none is queued).
func startQueued(ctx context.Context, st capsule.Store, at time.Time) (domain.Item, error) {
	caps, err := st.ListCapsules(ctx)
	if err != nil {
		return domain.Item{}, err
	}
	var oldest *domain.Item
	for _, c := range caps {
		items, err := st.ListItems(ctx, c.Name, domain.StatusQueued, "", 1000)
		if err != nil {
			return domain.Item{}, err
		}
		for i := range items {
			it := items[i]
			if oldest == nil || it.TimeUpdated.Before(oldest.TimeUpdated) ||
				it.TimeUpdated.Equal(oldest.TimeUpdated) && it.ID < oldest.ID {
				oldest = &it
			}
		}
	}
	if oldest == nil {
		return domain.Item{}, domain.ErrNotFound
	}
	return st.StartItem(ctx, oldest.ID, oldest.ContentHash, at)
}

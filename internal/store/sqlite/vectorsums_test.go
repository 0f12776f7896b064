package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
	"capsuled/internal/vecmath"
)

// sumsFromChunks is the reference of VectorSums: each searchable item's
// vectors read back and summed here.
func sumsFromChunks(t *testing.T, st *sqlite.CapsuleStore, capsule string) map[string]string {
	t.Helper()
	ctx := context.Background()
	items, err := st.SearchableItems(ctx, capsule)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range items {
		cs, err := st.ItemChunks(ctx, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		n, crc := 0, uint32(0)
		for _, c := range cs {
			if c.Vector != nil {
				n++
				crc = vecmath.ChecksumUpdate(crc, c.Vector)
			}
		}
		out[it.ID] = sumKey(n, crc)
	}
	return out
}

func sumKey(n int, crc uint32) string {
	return time.Duration(n).String() + "/" + time.Duration(crc).String()
}

func storeSums(t *testing.T, st *sqlite.CapsuleStore, capsule string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.VectorSums(context.Background(), capsule, func(id string, n int, crc uint32) error {
		out[id] = sumKey(n, crc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSums(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items summed, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("%s: item %s sum %s, want %s", what, id, got[id], w)
		}
	}
}

// openWithCapsules opens a new database in a temporary folder, closed
// when the test ends, with the capsules named.
func openWithCapsules(t *testing.T, capsules ...string) *sqlite.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, c := range capsules {
		if err := db.Capsules().CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestVectorSums: the sums VectorSums reports are those of the vectors
// stored, after CompleteItem (kept in its transaction), after
// SetChunkVectors and a change of embedding model (forgotten by the
// triggers, computed again), after a direct write no store method made,
// and ItemVectors reads exactly the items asked for.
func TestVectorSums(t *testing.T) {
	ctx := context.Background()
	db := openWithCapsules(t, "c")
	st := db.Capsules()
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	vec := func(i, j int) []float32 {
		v := make([]float32, 4)
		for k := range v {
			v[k] = float32(i*10+j) + float32(k)/8
		}
		return v
	}
	for i := range 5 {
		id := "itm_" + string(rune('a'+i))
		hash := "h" + id
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: "c", Kind: domain.ItemText, URI: id, ContentHash: hash, TimeAdded: t0, TimeUpdated: t0}); err != nil {
			t.Fatal(err)
		}
		if _, err := startItem(ctx, st, id, hash, t0); err != nil {
			t.Fatal(err)
		}
		// Chunks out of idx order, item b without vectors, item c with one
		// chunk lacking its vector.
		var cs []domain.Chunk
		for j := 2; j >= 0; j-- {
			c := domain.Chunk{Idx: j, Text: "text", End: 4}
			if i != 1 && !(i == 2 && j == 1) {
				c.Vector = vec(i, j)
			}
			cs = append(cs, c)
		}
		if _, err := st.CompleteItem(ctx, id, hash, "text", cs, t0); err != nil {
			t.Fatal(err)
		}
	}
	sameSums(t, "after CompleteItem", storeSums(t, st, "c"), sumsFromChunks(t, st, "c"))

	if _, err := st.SetChunkVectors(ctx, "itm_c", "hitm_c", []domain.Chunk{{Idx: 1, Vector: vec(9, 9)}}); err != nil {
		t.Fatal(err)
	}
	sameSums(t, "after SetChunkVectors", storeSums(t, st, "c"), sumsFromChunks(t, st, "c"))

	if _, err := db.Write().ExecContext(ctx, "UPDATE chunks SET vector = ? WHERE item_id = 'itm_d' AND idx = 0", sqlite.EncodeVector(vec(7, 7))); err != nil {
		t.Fatal(err)
	}
	sameSums(t, "after a direct write", storeSums(t, st, "c"), sumsFromChunks(t, st, "c"))

	var read []string
	err := st.ItemVectors(ctx, []string{"itm_e", "itm_zz"}, func(id string, idx int, v []float32) error {
		if v[0] != vec(4, idx)[0] {
			t.Errorf("item e chunk %d: vector %v", idx, v)
		}
		read = append(read, id+"/"+time.Duration(idx).String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[itm_e/0s itm_e/1ns itm_e/2ns]"; fmt.Sprint(read) != want {
		t.Fatalf("ItemVectors read %v, want %s", read, want)
	}

	if _, err := st.UseEmbeddingSpace(ctx, domain.EmbeddingSpace{Model: "other", Dimensions: 4}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UseEmbeddingSpace(ctx, domain.EmbeddingSpace{Model: "new", Dimensions: 4}, t0); err != nil {
		t.Fatal(err)
	}
	got := storeSums(t, st, "c")
	sameSums(t, "after a change of model", got, sumsFromChunks(t, st, "c"))
	if got["itm_a"] != sumKey(0, 0) {
		t.Fatalf("after a change of model item a sums %s, want no vectors", got["itm_a"])
	}

}

// TestSearchableItemsInParts: read in id ranges on several connections,
// SearchableItems lists the same items, in the same order, as in one
// read: every searchable item of the capsule once, none of another
// capsule's (whose ids interleave) and none not yet searchable.
func TestSearchableItemsInParts(t *testing.T) {
	ctx := context.Background()
	st := openWithCapsules(t, "c", "d").Capsules()
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	want := 0
	for i := range 40 {
		capsule := "c"
		if i%3 == 0 {
			capsule = "d"
		}
		id := fmt.Sprintf("itm_%03d", i)
		hash := "h" + id
		if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: capsule, Kind: domain.ItemText, URI: id, ContentHash: hash,
			Metadata: map[string]any{"i": float64(i)}, TimeAdded: t0, TimeUpdated: t0}); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			continue // queued: not searchable
		}
		if _, err := startItem(ctx, st, id, hash, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CompleteItem(ctx, id, hash, "text", []domain.Chunk{{Idx: 0, Text: "text", End: 4}}, t0); err != nil {
			t.Fatal(err)
		}
		if capsule == "c" {
			want++
		}
	}
	one, err := sqlite.SearchableItemsInParts(ctx, st, "c", 1<<30, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != want {
		t.Fatalf("one read: %d items, want %d", len(one), want)
	}
	for _, it := range one {
		if it.Capsule != "c" || it.Status != domain.StatusReady || it.Metadata["i"] == nil {
			t.Fatalf("one read: item %+v", it)
		}
	}
	for _, perPart := range []int{1, 2, 5, 9} {
		for _, parts := range []int{2, 3, 8} {
			got, err := sqlite.SearchableItemsInParts(ctx, st, "c", perPart, parts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(one) {
				t.Fatalf("%d parts of %d: %d items, want %d", parts, perPart, len(got), len(one))
			}
			for i := range got {
				if got[i].ID != one[i].ID || got[i].Metadata["i"] != one[i].Metadata["i"] {
					t.Fatalf("%d parts of %d: item %d is %s, want %s", parts, perPart, i, got[i].ID, one[i].ID)
				}
			}
		}
	}
	if got, err := st.SearchableItems(ctx, "nope"); err != nil || len(got) != 0 {
		t.Fatalf("unknown capsule: %d items, %v", len(got), err)
	}
}

package storetest

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/retrieval"
)

// StoreSearcher checks a store that searches capsules itself
// (retrieval.StoreSearcher): dense top-k in cosine order with the exact
// cosines, a selective filter that still gives k chunks, keyword search under
// the same filter, cosines and items by id, and an item deleted or failed
// gone from every one of them. A store that is not a StoreSearcher skips.
func StoreSearcher(t *testing.T, newStore func(t *testing.T) capsule.Store) {
	t.Helper()
	ctx := context.Background()
	st := newStore(t)
	ss, ok := st.(retrieval.StoreSearcher)
	if !ok {
		t.Skipf("%T is not a retrieval.StoreSearcher", st)
	}
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, c := range []string{"s", "other"} {
		if err := st.CreateCapsule(ctx, domain.Capsule{Name: c, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	// 20 items of 5 chunks in s (and 5 in other), vectors on a circle
	// (the cosine of chunk j of item i with the axis is cos(angle(i, j))),
	// every chunk's text "stone", item i's group i%10.
	angle := func(i, j int) float64 { return float64(i*5+j) * 0.013 }
	vec := func(a float64) []float32 { return []float32{float32(math.Cos(a)), float32(math.Sin(a)), 0, 0} }
	for _, c := range []string{"s", "other"} {
		for i := range map[string]int{"s": 20, "other": 5}[c] {
			id := fmt.Sprintf("itm_%s%02d", c, i)
			if _, _, err := st.PutItem(ctx, domain.Item{ID: id, Capsule: c, Kind: domain.ItemText, URI: id, Size: 1, ContentHash: "h" + id,
				Metadata: map[string]any{"group": float64(i % 10)}, TimeAdded: t0, TimeUpdated: t0, Status: domain.StatusQueued}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.StartItem(ctx, id, "h"+id, t0); err != nil {
				t.Fatal(err)
			}
			var chunks []domain.Chunk
			for j := range 5 {
				chunks = append(chunks, domain.Chunk{Idx: j, Text: "stone", End: 5, Tokens: 1, Vector: vec(angle(i, j))})
			}
			if _, err := st.CompleteItem(ctx, id, "h"+id, "stone", chunks, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := vec(0)
	keys := func(ms []retrieval.Match) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = fmt.Sprintf("%s/%d", m.ItemID, m.Idx)
		}
		return out
	}
	t.Run("dense order and cosines", func(t *testing.T) {
		ms, err := ss.DenseTopK(ctx, "s", q, 7, domain.Wishlist{})
		if err != nil {
			t.Fatal(err)
		}
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Cosine > ms[j].Cosine })
		if got := fmt.Sprint(keys(ms)); got != "[itm_s00/0 itm_s00/1 itm_s00/2 itm_s00/3 itm_s00/4 itm_s01/0 itm_s01/1]" {
			t.Fatalf("dense top 7: %s", got)
		}
		for k, m := range ms {
			if want := math.Cos(angle(0, 0) + float64(k)*0.013); math.Abs(m.Cosine-want) > 1e-5 {
				t.Errorf("%s: cosine %v, want %v", keys(ms)[k], m.Cosine, want)
			}
		}
	})
	group := domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "group", Op: domain.OpEq, Value: 7.0}}}
	t.Run("selective filter gives k", func(t *testing.T) {
		ms, err := ss.DenseTopK(ctx, "s", q, 8, group)
		if err != nil {
			t.Fatal(err)
		}
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Cosine > ms[j].Cosine })
		if got := fmt.Sprint(keys(ms)); got != "[itm_s07/0 itm_s07/1 itm_s07/2 itm_s07/3 itm_s07/4 itm_s17/0 itm_s17/1 itm_s17/2]" {
			t.Fatalf("dense top 8 of group 7: %s", got)
		}
		var kw []string
		err = ss.KeywordWhere(ctx, "s", []string{"stone"}, 20, group, func(id string, idx int, score float64) bool {
			if score <= 0 {
				t.Errorf("keyword score %v", score)
			}
			kw = append(kw, fmt.Sprintf("%s/%d", id, idx))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if sort.Strings(kw); len(kw) != 10 || kw[0] != "itm_s07/0" || kw[9] != "itm_s17/4" {
			t.Fatalf("keyword search of group 7: %v", kw)
		}
	})
	t.Run("cosines and items by id", func(t *testing.T) {
		cos, found, err := ss.ChunkCosines(ctx, "s", q, []string{"itm_s03", "itm_other03", "itm_s03"}, []int{2, 2, 9})
		if err != nil {
			t.Fatal(err)
		}
		if !found[0] || found[1] || found[2] || math.Abs(cos[0]-math.Cos(angle(3, 2))) > 1e-5 {
			t.Fatalf("cosines %v found %v", cos, found)
		}
		its, err := ss.ItemsByID(ctx, "s", []string{"itm_s03", "itm_other03", "itm_nope"})
		if err != nil || len(its) != 1 || its[0].ID != "itm_s03" || its[0].Metadata["group"] != 3.0 {
			t.Fatalf("items by id: %+v %v", its, err)
		}
	})
	t.Run("deleted and failed items are gone", func(t *testing.T) {
		if _, err := st.DeleteItem(ctx, "s", "itm_s00"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RequeueItem(ctx, "s", "itm_s01", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StartItem(ctx, "itm_s01", "hitm_s01", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.FailItem(ctx, "itm_s01", "hitm_s01", "broken", t0); err != nil {
			t.Fatal(err)
		}
		ms, err := ss.DenseTopK(ctx, "s", q, 100, domain.Wishlist{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 90 {
			t.Fatalf("%d chunks after a delete and a failure, want 90", len(ms))
		}
		for _, m := range ms {
			if m.ItemID == "itm_s00" || m.ItemID == "itm_s01" {
				t.Fatalf("%s/%d still found", m.ItemID, m.Idx)
			}
		}
		its, err := ss.ItemsByID(ctx, "s", []string{"itm_s00", "itm_s01", "itm_s02"})
		if err != nil || len(its) != 1 {
			t.Fatalf("items by id: %+v %v", its, err)
		}
	})
}

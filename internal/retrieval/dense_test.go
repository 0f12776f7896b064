package retrieval

import (
	"context"
	"sort"
	"testing"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
)

// naiveTopK is the reference: every chunk scored, sorted, cut.
func naiveTopK(ci *capIndex, q []float32, dim, k int, pred Predicate) []ref {
	type s struct {
		r ref
		v float32
	}
	var all []s
	for _, en := range ci.items {
		if pred != nil && !pred(&en.item) {
			continue
		}
		for i, idx := range en.idxs {
			all = append(all, s{ref{en.item.ID, idx}, vecmath.Dot(q, en.vecs[i*dim:(i+1)*dim])})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return refLess(all[i].r, all[j].r)
	})
	out := []ref{}
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.r)
	}
	return out
}

func TestDenseTopK(t *testing.T) {
	t.Parallel()
	// 20,000 chunks: enough for two workers on two cores.
	src := newFakeSource(400, 50, 64, 50)
	qs := src.queries(20)
	shard3 := Compile(domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}})
	ctx := context.Background()
	exact := New(src, nil, 64, Config{ApproxMin: -1})
	exact.emb = fixedEmbedder{qs[0]} // load vectors
	ci, err := exact.load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		k    int
		pred Predicate
	}{{"k=10", 10, nil}, {"k=100", 100, nil}, {"filtered", 10, shard3}, {"k beyond the capsule", 30000, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			for qi, q := range qs[:5] {
				want := naiveTopK(ci, q, 64, tc.k, tc.pred)
				got := denseTopK(ci, q, 64, tc.k, tc.pred, -1, 0)
				if len(got) != len(want) {
					t.Fatalf("query %d: %d results, want %d", qi, len(got), len(want))
				}
				for i := range want {
					if got[i].ref != want[i] {
						t.Fatalf("query %d, rank %d: %v, want %v", qi, i, got[i].ref, want[i])
					}
				}
			}
		})
	}
	// Ties break by item id then idx: the same vector everywhere.
	t.Run("ties", func(t *testing.T) {
		same := &capIndex{items: map[string]*entry{}}
		for _, id := range []string{"b", "a", "c"} {
			same.items[id] = &entry{item: domain.Item{ID: id}, idxs: []int{1, 0}, vecs: []float32{1, 0, 1, 0}}
			same.chunks += 2
		}
		got := denseTopK(same, []float32{1, 0}, 2, 3, nil, -1, 0)
		want := []ref{{"a", 0}, {"a", 1}, {"b", 0}}
		for i := range want {
			if got[i].ref != want[i] {
				t.Fatalf("rank %d: %v, want %v", i, got[i].ref, want[i])
			}
		}
	})
}

func TestApproxRecall(t *testing.T) {
	t.Parallel()
	src := newFakeSource(400, 50, 384, 200)
	qs := src.queries(20)
	exact := New(src, fixedEmbedder{qs[0]}, 384, Config{ApproxMin: -1})
	approx := New(src, fixedEmbedder{qs[0]}, 384, Config{ApproxMin: 1, ApproxRerank: 500})
	shard3 := Compile(domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 3.0}}})
	for _, tc := range []struct {
		name string
		pred Predicate
	}{{"all", nil}, {"filtered", shard3}} {
		if r := recallAt10(t, exact, approx, qs, tc.pred); r < 0.9 {
			t.Errorf("%s: recall@10 %.3f, want ≥ 0.9", tc.name, r)
		}
	}
	// A filter that leaves fewer chunks than the rerank size is exact.
	one := Compile(domain.Wishlist{ItemIDs: []string{"itm_000007"}})
	if r := recallAt10(t, exact, approx, qs, one); r != 1 {
		t.Errorf("selective filter: recall@10 %.3f, want 1", r)
	}
}

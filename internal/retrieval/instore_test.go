package retrieval

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/terms"
	"capsuled/internal/vecmath"
)

// fakeChunkStore is an in-memory Source: items with chunks of words from a
// small vocabulary, random unit vectors, and keyword scores Σ tf·weight
// (BM25's shape, in order best first, ties by item id then idx).
type fakeChunkStore struct {
	items  []domain.Item
	texts  map[ref]string
	vecs   map[ref][]float32
	weight map[string]float64
	dim    int
}

var fakeVocab = strings.Fields("amber basalt cedar delta ember fjord granite harbor island juniper kelp lagoon " +
	"meadow nectar obsidian prairie quartz river summit tundra")

func newFakeChunkStore(nItems, per, dim int) *fakeChunkStore {
	r := rand.New(rand.NewPCG(11, 12))
	f := &fakeChunkStore{texts: map[ref]string{}, vecs: map[ref][]float32{}, weight: map[string]float64{}, dim: dim}
	for i, w := range fakeVocab {
		f.weight[w] = 1 + float64(i%5)/2
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range nItems {
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		it := domain.Item{ID: fmt.Sprintf("itm_%03d", i), Capsule: "c", Kind: domain.ItemText, URI: fmt.Sprintf("doc://%d", i),
			TimeAdded: at, TimeAuthored: &at, Metadata: map[string]any{"shard": float64(i % 4),
				"day": at.In(time.FixedZone("", 3600)).Format(time.RFC3339)}}
		f.items = append(f.items, it)
		for idx := range per {
			words := make([]string, 6)
			for j := range words {
				words[j] = fakeVocab[r.IntN(len(fakeVocab))]
			}
			f.texts[ref{it.ID, idx}] = strings.Join(words, " ")
			f.vecs[ref{it.ID, idx}] = randomUnit(r, dim)
		}
	}
	return f
}

func (f *fakeChunkStore) SearchableItems(context.Context, string) ([]domain.Item, error) {
	return f.items, nil
}

func (f *fakeChunkStore) ChunkVectors(_ context.Context, _ string, fn func(string, int, []float32) error) error {
	for _, it := range f.items {
		for idx := 0; ; idx++ {
			v, ok := f.vecs[ref{it.ID, idx}]
			if !ok {
				break
			}
			if err := fn(it.ID, idx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyword scores every chunk of items keep accepts for ts, best first.
func (f *fakeChunkStore) keyword(ts []string, keep func(*domain.Item) bool) []Match {
	var out []Match
	for i := range f.items {
		it := &f.items[i]
		if keep != nil && !keep(it) {
			continue
		}
		for idx := 0; ; idx++ {
			text, ok := f.texts[ref{it.ID, idx}]
			if !ok {
				break
			}
			s := 0.0
			for _, w := range terms.Words(text) {
				for _, t := range ts {
					if w == t {
						s += f.weight[w]
					}
				}
			}
			if s > 0 {
				out = append(out, Match{it.ID, idx, s})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return matchLess(out[i], out[j]) })
	return out
}

func (f *fakeChunkStore) Keyword(_ context.Context, _ string, ts []string, fn func(string, int, float64) bool) error {
	for _, m := range f.keyword(ts, nil) {
		if !fn(m.ItemID, m.Idx, m.Cosine) {
			break
		}
	}
	return nil
}

func (f *fakeChunkStore) ChunkText(_ context.Context, id string, idx int) (string, error) {
	t, ok := f.texts[ref{id, idx}]
	if !ok {
		return "", domain.ErrNotFound
	}
	return t, nil
}

// fakeSearcher is the same store as a StoreSearcher: exact dense search
// (the dot product the Engine's own scan uses), the wishlist's filters
// applied only when filters is set (a store may apply fewer: the Engine
// checks), and a failure to inject per method.
type fakeSearcher struct {
	*fakeChunkStore
	filters bool
	fail    map[string]error
	gen     int64
}

func (f *fakeSearcher) keep(w domain.Wishlist) func(*domain.Item) bool {
	if !f.filters {
		return nil
	}
	return Compile(w)
}

func (f *fakeSearcher) DenseTopK(_ context.Context, _ string, q []float32, k int, w domain.Wishlist) ([]Match, error) {
	if err := f.fail["dense"]; err != nil {
		return nil, err
	}
	keep := f.keep(w)
	var out []Match
	for i := range f.items {
		if keep != nil && !keep(&f.items[i]) {
			continue
		}
		for idx := 0; ; idx++ {
			v, ok := f.vecs[ref{f.items[i].ID, idx}]
			if !ok {
				break
			}
			out = append(out, Match{f.items[i].ID, idx, float64(vecmath.Dot(q, v))})
		}
	}
	// Unsorted on purpose beyond the cut: the Engine orders the list.
	sort.Slice(out, func(i, j int) bool { return matchLess(out[i], out[j]) })
	out = out[:min(k, len(out))]
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func (f *fakeSearcher) KeywordWhere(_ context.Context, _ string, ts []string, _ int, w domain.Wishlist, fn func(string, int, float64) bool) error {
	if err := f.fail["keyword"]; err != nil {
		return err
	}
	for _, m := range f.keyword(ts, f.keep(w)) {
		if !fn(m.ItemID, m.Idx, m.Cosine) {
			break
		}
	}
	return nil
}

func (f *fakeSearcher) ChunkCosines(_ context.Context, _ string, q []float32, ids []string, idxs []int) ([]float64, []bool, error) {
	if err := f.fail["cosines"]; err != nil {
		return nil, nil, err
	}
	if f.fail["cosines short"] != nil {
		return nil, nil, nil
	}
	cos, found := make([]float64, len(ids)), make([]bool, len(ids))
	for i := range ids {
		if v, ok := f.vecs[ref{ids[i], idxs[i]}]; ok {
			cos[i], found[i] = float64(vecmath.Dot(q, v)), true
		}
	}
	return cos, found, nil
}

func (f *fakeSearcher) ItemsByID(_ context.Context, _ string, ids []string) ([]domain.Item, error) {
	if err := f.fail["items"]; err != nil {
		return nil, err
	}
	var out []domain.Item
	for _, it := range f.items {
		for _, id := range ids {
			if it.ID == id {
				out = append(out, it)
			}
		}
	}
	return out, nil
}

func (f *fakeSearcher) Generation(context.Context, string) (int64, error) {
	if err := f.fail["generation"]; err != nil {
		return 0, err
	}
	return f.gen, nil
}

// fakeTextEmbedder embeds a text as a random unit vector seeded by its hash.
type fakeTextEmbedder struct{ dim int }

func (e fakeTextEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		out[i] = randomUnit(rand.New(rand.NewPCG(h.Sum64(), 1)), e.dim)
	}
	return out, nil
}

// TestStoreSearchMatchesMemory runs the same queries through an Engine
// over its own index and through one over a StoreSearcher of the same data,
// which applies the filters or not: the hits, their order and their scores
// are the same.
func TestStoreSearchMatchesMemory(t *testing.T) {
	ctx := context.Background()
	data := newFakeChunkStore(60, 3, 16)
	now := func() time.Time { return time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC) }
	hits := 0
	for _, fusion := range []Fusion{FusionConvex, FusionRRF} {
		cfg := Config{Fusion: fusion, Depth: 20, Now: now}
		mem := New(data, fakeTextEmbedder{16}, 16, cfg)
		pushed := New(&fakeSearcher{fakeChunkStore: data, filters: true}, fakeTextEmbedder{16}, 16, cfg)
		unpushed := New(&fakeSearcher{fakeChunkStore: data}, fakeTextEmbedder{16}, 16, cfg)
		after := time.Date(2025, 2, 10, 0, 0, 0, 0, time.UTC)
		for _, w := range []domain.Wishlist{
			{},
			{Metadata: []domain.MetadataFilter{{Key: "shard", Op: domain.OpEq, Value: 2.0}}},
			{Metadata: []domain.MetadataFilter{{Key: "day", Op: domain.OpGte, Value: "2025-02-25T00:00:00Z"}}},
			{AuthoredAfter: &after, MaxChunksPerItem: 1},
			{MinScore: 0.3},
			{Recency: &domain.Recency{Field: "time_authored", HalfLife: 30 * 24 * time.Hour, Weight: 0.3}},
			{ItemIDs: []string{"itm_007", "itm_042"}},
		} {
			for _, mode := range []domain.SearchMode{domain.ModeKeyword, domain.ModeSemantic, domain.ModeHybrid} {
				for _, text := range []string{"amber cedar river", "quartz summit", "tundra"} {
					w.Mode = mode
					q := domain.Query{Text: text, Limit: 7, Wishlist: w}
					want, err := mem.Search(ctx, "c", q)
					if err != nil {
						t.Fatal(err)
					}
					hits += len(want)
					for name, eng := range map[string]*Engine{"filters in the store": pushed, "filters in the engine": unpushed} {
						got, err := eng.Search(ctx, "c", q)
						if err != nil {
							t.Fatal(err)
						}
						if fmt.Sprint(hitKeys(got)) != fmt.Sprint(hitKeys(want)) {
							t.Errorf("%s, %s %s %q %+v:\n got  %v\n want %v", name, fusion, mode, text, w, hitKeys(got), hitKeys(want))
						}
					}
				}
			}
		}
		if items, vectors := pushed.Stats("c"); items != 0 || vectors != 0 {
			t.Errorf("the engine over a StoreSearcher holds %d items, %d vectors", items, vectors)
		}
	}
	if hits < 500 {
		t.Errorf("only %d hits in all", hits)
	}
	t.Logf("%d hits compared", hits)
}

func hitKeys(hs []domain.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s/%d:%.9f", h.Item.ID, h.Idx, h.Score)
	}
	return out
}

// TestStoreSearchErrors: each StoreSearcher call that fails fails the query
// with its error.
func TestStoreSearchErrors(t *testing.T) {
	ctx := context.Background()
	data := newFakeChunkStore(10, 2, 8)
	boom := errors.New("boom")
	for _, name := range []string{"dense", "keyword", "cosines", "cosines short", "items", "generation"} {
		t.Run(name, func(t *testing.T) {
			eng := New(&fakeSearcher{fakeChunkStore: data, fail: map[string]error{name: boom}}, fakeTextEmbedder{8}, 8, Config{Depth: 1})
			// Depth 2: keyword candidates outside the dense top need cosines.
			_, err := eng.Search(ctx, "c", domain.Query{Text: "amber cedar river", Limit: 1})
			if err == nil {
				t.Fatal("no error")
			}
			if name != "cosines short" && !errors.Is(err, boom) {
				t.Fatalf("error %v does not wrap the store's", err)
			}
		})
	}
}

// TestStoreSearchFollowsGeneration: the keyword bounds cached for a capsule
// are dropped when its generation moves (another process changed it).
func TestStoreSearchFollowsGeneration(t *testing.T) {
	ctx := context.Background()
	src := &fakeSearcher{fakeChunkStore: newFakeChunkStore(10, 2, 8), filters: true}
	eng := New(src, nil, 0, Config{})
	search := func() {
		t.Helper()
		if _, err := eng.Search(ctx, "c", domain.Query{Text: "amber", Limit: 5}); err != nil {
			t.Fatal(err)
		}
	}
	search()
	eng.boundsMu.Lock()
	gen0 := eng.boundsGen
	eng.boundsMu.Unlock()
	search()
	src.gen++
	search()
	eng.boundsMu.Lock()
	defer eng.boundsMu.Unlock()
	if eng.boundsGen != gen0+1 {
		t.Fatalf("bounds generation %d, want %d", eng.boundsGen, gen0+1)
	}
}

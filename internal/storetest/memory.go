package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

// MemoryStore runs the memory.Store suite against fresh stores made by
// newStore.
func MemoryStore(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	live := domain.LiveFilter{Now: t0.Add(time.Hour)}
	rec := func(ns, id, content string, at time.Time) domain.MemoryRecord {
		return domain.MemoryRecord{Memory: domain.Memory{
			ID: id, Namespace: ns, Kind: domain.MemoryNote, Content: content,
			Metadata:  map[string]any{"source": "test"},
			CreatedAt: at, UpdatedAt: at, ValidFrom: at,
		}}
	}
	insert := func(t *testing.T, st memory.Store, recs ...domain.MemoryRecord) []domain.StoredMemory {
		t.Helper()
		out, err := st.InsertMemories(ctx, recs)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("InsertGetAndNotFound", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		exp := t0.Add(48 * time.Hour)
		r := rec("a", "mem_1", "Alice likes green tea", t0)
		r.Memory.Kind, r.Memory.Role, r.Memory.Conversation, r.Memory.ExpiresAt = domain.MemoryTurn, "user", "conv1", &exp
		if got := insert(t, st, r); len(got) != 1 || !got[0].Created || got[0].ID != "mem_1" {
			t.Fatalf("stored %+v", got)
		}
		m, err := st.GetMemory(ctx, "a", "mem_1")
		if err != nil {
			t.Fatal(err)
		}
		if m.Content != r.Memory.Content || m.Kind != domain.MemoryTurn || m.Role != "user" || m.Conversation != "conv1" ||
			!m.CreatedAt.Equal(t0) || m.ExpiresAt == nil || !m.ExpiresAt.Equal(exp) || m.Metadata["source"] != "test" || m.InvalidFrom != nil {
			t.Fatalf("got %+v", m)
		}
		if _, err := st.GetMemory(ctx, "b", "mem_1"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("other namespace: %v, want ErrNotFound", err)
		}
		if err := st.DeleteMemory(ctx, "b", "mem_1"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("delete from other namespace: %v", err)
		}
		if err := st.DeleteMemory(ctx, "a", "mem_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetMemory(ctx, "a", "mem_1"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	})

	t.Run("DedupeWithinConversation", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		turn := func(id, conv string) domain.MemoryRecord {
			r := rec("a", id, "same words", t0)
			r.Memory.Kind, r.Memory.Conversation, r.DedupeKey = domain.MemoryTurn, conv, "user:hash1"
			return r
		}
		first := insert(t, st, turn("mem_1", "c1"))
		again := insert(t, st, turn("mem_2", "c1"), turn("mem_3", "c2"))
		if !first[0].Created || again[0].Created || again[0].ID != "mem_1" || !again[1].Created || again[1].ID != "mem_3" {
			t.Fatalf("first %+v again %+v", first, again)
		}
		// Which keys a conversation holds: only its own, in its namespace.
		for _, c := range []struct {
			ns, conv string
			want     bool
		}{{"a", "c1", true}, {"a", "c2", true}, {"a", "c3", false}, {"a", "", false}, {"b", "c1", false}} {
			got, err := st.StoredTurnKeys(ctx, c.ns, c.conv, []string{"user:hash1", "user:hash2"})
			if err != nil || got["user:hash1"] != c.want || got["user:hash2"] {
				t.Fatalf("StoredTurnKeys(%q, %q) = %v, %v; want user:hash1 %v, user:hash2 false", c.ns, c.conv, got, err, c.want)
			}
		}
		if got, err := st.StoredTurnKeys(ctx, "a", "c1", nil); err != nil || len(got) != 0 {
			t.Fatalf("StoredTurnKeys of no keys = %v, %v", got, err)
		}
		many := make([]string, 1200) // more than one statement's worth
		for i := range many {
			many[i] = fmt.Sprintf("user:other%d", i)
		}
		if got, err := st.StoredTurnKeys(ctx, "a", "c1", append(many, "user:hash1")); err != nil || len(got) != 1 || !got["user:hash1"] {
			t.Fatalf("StoredTurnKeys of 1,201 keys = %v, %v; want user:hash1 alone", got, err)
		}
		// The same id twice in one namespace is kept once; in another, a conflict.
		if got := insert(t, st, rec("a", "mem_9", "x", t0), rec("a", "mem_9", "x", t0)); !got[0].Created || got[1].Created {
			t.Fatalf("same id: %+v", got)
		}
		if _, err := st.InsertMemories(ctx, []domain.MemoryRecord{rec("b", "mem_9", "x", t0)}); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("id of another namespace: %v, want ErrConflict", err)
		}
	})

	t.Run("ListPagesNewestFirst", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		for i := 0; i < 7; i++ {
			insert(t, st, rec("a", fmt.Sprintf("mem_%d", i), fmt.Sprintf("note %d", i), t0.Add(time.Duration(i)*time.Minute)))
		}
		insert(t, st, rec("b", "mem_b", "other", t0))
		var ids []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, next, err := st.ListMemories(ctx, "a", domain.MemoryListFilter{LiveFilter: live, Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page {
				ids = append(ids, m.ID)
			}
			if next == "" {
				break
			}
			cursor = next
			if pages > 5 {
				t.Fatal("paging does not end")
			}
		}
		want := "[mem_6 mem_5 mem_4 mem_3 mem_2 mem_1 mem_0]"
		if fmt.Sprint(ids) != want {
			t.Fatalf("ids %v, want %s", ids, want)
		}
		if _, _, err := st.ListMemories(ctx, "a", domain.MemoryListFilter{LiveFilter: live, Cursor: "garbage"}); err == nil {
			t.Fatal("bad cursor accepted")
		}
	})

	t.Run("SearchIsolatedAndLive", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		past := t0.Add(-time.Minute)
		expired := rec("a", "mem_exp", "the secret password is swordfish", t0)
		expired.Memory.ExpiresAt = &past
		insert(t, st,
			rec("a", "mem_tea", "Alice prefers green tea in the morning", t0),
			rec("a", "mem_car", "Alice drives a red car", t0),
			rec("b", "mem_btea", "Bob prefers green tea too", t0),
			expired)
		hits, err := st.SearchText(ctx, "a", "What tea does Alice like?", 10, live)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].ID != "mem_tea" {
			t.Fatalf("hits %+v", hits)
		}
		for _, h := range hits {
			if h.ID == "mem_btea" {
				t.Fatal("search crossed namespaces")
			}
		}
		if hits, _ := st.SearchText(ctx, "a", "swordfish", 10, domain.LiveFilter{Now: t0}); len(hits) != 0 {
			t.Fatalf("expired memory found: %+v", hits)
		}
		if hits, _ := st.SearchText(ctx, "a", "swordfish", 10, domain.LiveFilter{Now: t0, IncludeExpired: true}); len(hits) != 1 {
			t.Fatalf("include expired: %+v", hits)
		}
		// The query's words are terms.Memory's: a query of memory stopwords
		// alone ("you", "my" are not capsule stopwords) searches for nothing.
		if hits, err := st.SearchText(ctx, "a", "Did you drive my car?", 10, live); err != nil || len(hits) != 1 || hits[0].ID != "mem_car" {
			t.Fatalf("stopwords and car: %+v %v", hits, err)
		}
		if hits, err := st.SearchText(ctx, "a", "What did you do with my", 10, live); err != nil || len(hits) != 0 {
			t.Fatalf("stopwords only: %+v %v", hits, err)
		}
		// FTS5 syntax in the query is text, never an error.
		for _, q := range []string{`"unbalanced`, "NEAR(a b", "tea*", "-car", "a AND OR", "", "!!!"} {
			if _, err := st.SearchText(ctx, "a", q, 5, live); err != nil {
				t.Fatalf("query %q: %v", q, err)
			}
		}
	})

	t.Run("VectorsAndUpdate", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		r := rec("a", "mem_v", "vector memory", t0)
		r.Vector, r.VectorModel = []float32{0.5, -1, 2}, "fake-3"
		insert(t, st, r, rec("b", "mem_w", "other", t0))
		vs, err := st.Vectors(ctx, "a", "fake-3", live)
		if err != nil || len(vs) != 1 || vs[0].ID != "mem_v" || fmt.Sprint(vs[0].Vec) != "[0.5 -1 2]" {
			t.Fatalf("vectors %+v %v", vs, err)
		}
		if vs, _ := st.Vectors(ctx, "a", "other-model", live); len(vs) != 0 {
			t.Fatalf("vectors of another model: %+v", vs)
		}
		r.Memory.Content, r.SearchText, r.Memory.UpdatedAt = "changed words entirely", "", t0.Add(time.Minute)
		if err := st.UpdateMemory(ctx, r); err != nil {
			t.Fatal(err)
		}
		if hits, _ := st.SearchText(ctx, "a", "entirely", 5, live); len(hits) != 1 {
			t.Fatalf("update not re-indexed: %+v", hits)
		}
		if hits, _ := st.SearchText(ctx, "a", "vector", 5, live); len(hits) != 0 {
			t.Fatalf("old text still indexed: %+v", hits)
		}
		r.Memory.Namespace = "b"
		if err := st.UpdateMemory(ctx, r); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("update across namespaces: %v", err)
		}
	})

	t.Run("SupersedeKeepsBoth", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		insert(t, st, rec("a", "mem_old", "Alice lives in Paris", t0), rec("a", "mem_new", "Alice lives in Berlin", t0.Add(time.Hour)))
		at := t0.Add(time.Hour)
		if err := st.Supersede(ctx, "a", "mem_old", "mem_new", at); err != nil {
			t.Fatal(err)
		}
		old, _ := st.GetMemory(ctx, "a", "mem_old")
		if old.InvalidFrom == nil || !old.InvalidFrom.Equal(at) || old.SupersededBy != "mem_new" {
			t.Fatalf("old %+v", old)
		}
		if hits, _ := st.SearchText(ctx, "a", "Alice lives", 5, live); len(hits) != 1 || hits[0].ID != "mem_new" {
			t.Fatalf("superseded fact selected: %+v", hits)
		}
		if hits, _ := st.SearchText(ctx, "a", "Alice lives", 5, domain.LiveFilter{Now: live.Now, IncludeSuperseded: true}); len(hits) != 2 {
			t.Fatalf("include superseded: %+v", hits)
		}
		if err := st.Supersede(ctx, "b", "mem_old", "mem_new", at); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("supersede across namespaces: %v", err)
		}
	})

	t.Run("NamespacesDeleteExportFailures", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		insert(t, st, rec("a", "mem_1", "one", t0), rec("a", "mem_2", "two", t0.Add(time.Minute)), rec("b", "mem_3", "three", t0))
		if err := st.RecordFailure(ctx, domain.MemoryFailure{ID: "mfl_1", Namespace: "c", Stage: "extraction", Error: "bad json", Attempts: 3, Input: "x", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		nss, err := st.Namespaces(ctx, live.Now)
		if err != nil {
			t.Fatal(err)
		}
		if len(nss) != 3 || nss[0].Name != "a" || nss[0].MemoryCount != 2 || nss[0].Notes != 2 || nss[2].Name != "c" || nss[2].Failures != 1 {
			t.Fatalf("namespaces %+v", nss)
		}
		var exported []string
		if err := st.ExportNamespace(ctx, "a", func(m domain.Memory) error { exported = append(exported, m.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(exported) != "[mem_1 mem_2]" {
			t.Fatalf("exported %v", exported)
		}
		fs, err := st.Failures(ctx, "c", 10)
		if err != nil || len(fs) != 1 || fs[0].Error != "bad json" || fs[0].Attempts != 3 {
			t.Fatalf("failures %+v %v", fs, err)
		}
		if n, err := st.DeleteNamespace(ctx, "a"); err != nil || n != 2 {
			t.Fatalf("delete namespace: %d %v", n, err)
		}
		if _, err := st.Namespace(ctx, "a", live.Now); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("deleted namespace: %v", err)
		}
		if _, err := st.DeleteNamespace(ctx, "a"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
		if b, err := st.Namespace(ctx, "b", live.Now); err != nil || b.MemoryCount != 1 {
			t.Fatalf("other namespace touched: %+v %v", b, err)
		}
	})

	t.Run("DeleteExpired", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		soon := t0.Add(time.Minute)
		r := rec("a", "mem_e", "short lived", t0)
		r.Memory.ExpiresAt = &soon
		insert(t, st, r, rec("a", "mem_k", "kept", t0))
		if n, err := st.DeleteExpired(ctx, t0); err != nil || n != 0 {
			t.Fatalf("before expiry: %d %v", n, err)
		}
		if n, err := st.DeleteExpired(ctx, soon); err != nil || n != 1 {
			t.Fatalf("at expiry: %d %v", n, err)
		}
		if _, err := st.GetMemory(ctx, "a", "mem_k"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ConcurrentWritersLoseNothing", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		const writers, each = 8, 20
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					r := rec("a", fmt.Sprintf("mem_w%di%d", w, i), fmt.Sprintf("writer %d item %d", w, i), t0)
					// Every writer also resends one shared turn: it is kept once.
					shared := rec("a", fmt.Sprintf("mem_s%di%d", w, i), "shared", t0)
					shared.Memory.Conversation, shared.DedupeKey = "c", "user:shared"
					if _, err := st.InsertMemories(ctx, []domain.MemoryRecord{r, shared}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		ns, err := st.Namespace(ctx, "a", live.Now)
		if err != nil || ns.MemoryCount != writers*each+1 {
			t.Fatalf("count %+v %v, want %d", ns, err, writers*each+1)
		}
	})
}

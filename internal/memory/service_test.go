package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
	"capsuled/internal/store/sqlite"
)

// fakeEmbedder hashes words into a small bag-of-words vector: deterministic
// and good enough to rank texts that share words.
type fakeEmbedder struct{}

func (fakeEmbedder) Dim() int        { return 64 }
func (fakeEmbedder) ModelID() string { return "fake-bow-64" }
func (fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(w, ".,?!")))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

type bundle struct {
	svc   *memory.Service
	store memory.Store
	now   time.Time
}

func setup(t *testing.T, d memory.Deps, cfg memory.Config) *bundle {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := &bundle{store: db.Memory(), now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	d.Store = b.store
	if d.Generators == nil {
		d.Generators = []memory.Generator{memory.Extractive{}}
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return b.now }
	}
	b.svc, err = memory.New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func user(text string) domain.Message { return domain.TextMessage(domain.RoleUser, text) }

func chat(t *testing.T, b *bundle, ns string, msgs ...domain.Message) memory.ChatResult {
	t.Helper()
	res, err := b.svc.Chat(context.Background(), memory.ChatInput{Namespace: ns, Request: domain.ChatRequest{Model: memory.ExtractiveModel, Messages: msgs}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func count(t *testing.T, b *bundle, ns string) int {
	t.Helper()
	st, err := b.store.Namespace(context.Background(), ns, b.now)
	if err != nil {
		return 0
	}
	return st.MemoryCount
}

func TestExtractiveRemembersAcrossConversations(t *testing.T) {
	t.Parallel()
	for _, emb := range []memory.Embedder{nil, fakeEmbedder{}} {
		t.Run(fmt.Sprintf("embedder=%v", emb != nil), func(t *testing.T) {
			t.Parallel()
			b := setup(t, memory.Deps{Embedder: emb}, memory.Config{})
			first := chat(t, b, "alice", user("My favourite colour is teal and my cat is called Miso."))
			// The extractive reply only repeats memory: it is not stored.
			if len(first.Written) != 1 || len(first.Read) != 0 || first.Extraction != "none" {
				t.Fatalf("first turn %+v", first)
			}
			b.now = b.now.Add(24 * time.Hour)
			res := chat(t, b, "alice", user("What is my cat called?"))
			reply := res.Completion.Choices[0].Content
			if !strings.Contains(reply, "Miso") || !strings.HasPrefix(reply, "From memory: ") || !strings.Contains(reply, "2026-11-22") {
				t.Fatalf("reply %q", reply)
			}
			if len(res.Read) == 0 || res.Read[0] != first.Written[0] {
				t.Fatalf("read %v, want %s first", res.Read, first.Written[0])
			}
			// Another namespace knows nothing of it.
			other := chat(t, b, "bob", user("What is my cat called?"))
			if len(other.Read) != 0 || strings.Contains(other.Completion.Choices[0].Content, "Miso") {
				t.Fatalf("namespace leak: %+v", other)
			}
		})
	}
}

func TestResentHistoryIsStoredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{}, memory.Config{})
	history := []domain.Message{domain.TextMessage(domain.RoleSystem, "be brief")}
	distinct := map[string]bool{}
	for i := 0; i < 4; i++ {
		history = append(history, user(fmt.Sprintf("question number %d about gardening", i)))
		res := chat(t, b, "g", history...)
		if len(res.Written) != 1 {
			t.Fatalf("turn %d wrote %v, want the new user turn (extractive replies are not stored)", i, res.Written)
		}
		history = append(history, domain.TextMessage(domain.RoleAssistant, res.Completion.Choices[0].Content))
	}
	for _, m := range history[1:] {
		if m.Role == domain.RoleUser {
			distinct[m.Text()] = true
		}
	}
	if n := count(t, b, "g"); n != len(distinct) {
		t.Fatalf("%d memories, want %d (one per distinct turn)", n, len(distinct))
	}
	// The same history once more stores nothing.
	res := chat(t, b, "g", history...)
	if len(res.Written) != 0 {
		t.Fatalf("resend wrote %v", res.Written)
	}
	// A different conversation id stores the same texts again.
	res, err := b.svc.Chat(context.Background(), memory.ChatInput{Namespace: "g", ConversationID: "other",
		Request: domain.ChatRequest{Model: memory.ExtractiveModel, Messages: history[1:3]}})
	if err != nil || len(res.Written) != 1 {
		t.Fatalf("other conversation wrote %v (%v)", res.Written, err)
	}
}

// NewTurns names exactly the turns Chat would store: not those the
// conversation holds, not system messages or extractive replies, a repeated
// turn once; another conversation or namespace holds none of them.
func TestNewTurnsAreTheOnesChatStores(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{}, memory.Config{})
	ctx := context.Background()
	texts := func(msgs []domain.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Text())
		}
		return out
	}
	first := []domain.Message{domain.TextMessage(domain.RoleSystem, "be brief"), user("my bees live in Porto")}
	if got, err := b.svc.NewTurns(ctx, "g", "", first); err != nil || fmt.Sprint(texts(got)) != "[my bees live in Porto]" {
		t.Fatalf("before any turn: %q, %v", texts(got), err)
	}
	res := chat(t, b, "g", first...)
	resent := append(first, domain.TextMessage(domain.RoleAssistant, res.Completion.Choices[0].Content),
		domain.TextMessage(domain.RoleAssistant, "<think>they asked about bees</think>Noted."), user("and my hives are blue"), user("and my hives are blue"))
	got, err := b.svc.NewTurns(ctx, "g", "", resent)
	if err != nil || fmt.Sprint(texts(got)) != "[<think>they asked about bees</think>Noted. and my hives are blue]" {
		t.Fatalf("resent: %q, %v; want the new assistant turn and the new user turn once", texts(got), err)
	}
	res, err = b.svc.Chat(ctx, memory.ChatInput{Namespace: "g", Request: domain.ChatRequest{Model: memory.ExtractiveModel, Messages: resent}})
	if err != nil || len(res.Written) != len(got) {
		t.Fatalf("Chat wrote %v (%v), want the %d new turns", res.Written, err, len(got))
	}
	for _, c := range []struct{ ns, conv string }{{"g", "elsewhere"}, {"other", ""}} {
		if got, err := b.svc.NewTurns(ctx, c.ns, c.conv, resent); err != nil || len(got) != 3 {
			t.Fatalf("namespace %s conversation %q: %q, %v; want the three distinct turns", c.ns, c.conv, texts(got), err)
		}
	}
	if _, err := b.svc.NewTurns(ctx, "Bad Name!", "", resent); err == nil {
		t.Fatal("a bad namespace was accepted")
	}
}

func TestConcurrentTurnsLoseNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{Embedder: fakeEmbedder{}}, memory.Config{})
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.svc.Chat(context.Background(), memory.ChatInput{Namespace: "busy",
				Request: domain.ChatRequest{Model: memory.ExtractiveModel, Messages: []domain.Message{user(fmt.Sprintf("fact number %d: the sky is %d", i, i))}}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each turn stored its user message (extractive replies are not stored).
	if got := count(t, b, "busy"); got != n {
		t.Fatalf("%d memories, want %d", got, n)
	}
}

func TestExpiredMemoriesAreNotSelected(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{}, memory.Config{})
	ctx := context.Background()
	m, err := b.svc.Add(ctx, "e", memory.NewMemory{Content: "The door code is 4512"})
	if err != nil {
		t.Fatal(err)
	}
	if res := chat(t, b, "e", user("what is the door code")); len(res.Read) != 1 || res.Read[0] != m.ID {
		t.Fatalf("read %v", res.Read)
	}
	at := b.now.Add(time.Hour)
	if _, err := b.svc.SetExpiry(ctx, "e", m.ID, &at); err != nil {
		t.Fatal(err)
	}
	b.now = at
	for _, id := range chat(t, b, "e", user("what is the door code again")).Read {
		if id == m.ID {
			t.Fatalf("expired memory read")
		}
	}
	if n, err := b.svc.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep %d %v", n, err)
	}
}

func TestBudgetIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{}, memory.Config{})
	ctx := context.Background()
	for i := 0; i < 40; i++ {
		if _, err := b.svc.Add(ctx, "n", memory.NewMemory{Content: fmt.Sprintf("note %d about the harbour and the boats moored there", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, budget := range []int{0, 30, 100} {
		sel, err := b.svc.Select(ctx, memory.Query{Namespace: "n", Text: "harbour boats", BudgetTokens: budget})
		if err != nil {
			t.Fatal(err)
		}
		limit := budget
		if limit == 0 {
			limit = 1000
		}
		if sel.Tokens > limit || len(sel.Packed) == 0 || len(sel.Ranked) != 40 {
			t.Fatalf("budget %d: %d tokens, %d packed, %d ranked", budget, sel.Tokens, len(sel.Packed), len(sel.Ranked))
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{}, memory.Config{})
	ctx := context.Background()
	_, err := b.svc.Chat(ctx, memory.ChatInput{Namespace: "x", Request: domain.ChatRequest{Model: "gpt-nope", Messages: []domain.Message{user("hi")}}})
	if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindNotFound || e.Code != "model_not_found" || e.Param != "model" {
		t.Fatalf("unknown model: %v", err)
	}
	_, err = b.svc.Chat(ctx, memory.ChatInput{Namespace: "bad/ns", Request: domain.ChatRequest{Model: memory.ExtractiveModel, Messages: []domain.Message{user("hi")}}})
	if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindInvalid {
		t.Fatalf("bad namespace: %v", err)
	}
	if _, err := b.svc.Get(ctx, "x", "mem_nope"); err == nil {
		t.Fatal("missing memory found")
	}
}

// fakeUpstream is an OpenAI-compatible server: replies echo, extraction
// answers come from extract (nil: sleep past the deadline).
type fakeUpstream struct {
	extract  func(call int) string
	calls    atomic.Int32
	extracts atomic.Int32
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	var req struct {
		Model          string           `json:"model"`
		Messages       []map[string]any `json:"messages"`
		ResponseFormat map[string]any   `json:"response_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "bad request", 400)
		return
	}
	content := "upstream reply; saw " + fmt.Sprint(len(req.Messages)) + " messages"
	for _, m := range req.Messages {
		if s, _ := m["content"].(string); strings.Contains(s, memory.MemoryBlockStart) {
			content += " with memory"
		}
	}
	if req.ResponseFormat != nil {
		n := int(f.extracts.Add(1))
		content = f.extract(n)
		if content == "" {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "up-1", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

func upstreamBundle(t *testing.T, f *fakeUpstream, extractTimeout time.Duration) *bundle {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	up, err := memory.NewUpstream(memory.UpstreamConfig{URL: srv.URL + "/v1", Models: []string{"fake-llm"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return setup(t, memory.Deps{Generators: []memory.Generator{up, memory.Extractive{}}, Extractor: up.Extractor("")},
		memory.Config{ExtractTimeout: extractTimeout})
}

func TestUpstreamLearnsAndSupersedes(t *testing.T) {
	t.Parallel()
	var oldID atomic.Value
	oldID.Store("")
	f := &fakeUpstream{extract: func(call int) string {
		if call == 1 {
			return `{"facts": [{"fact": "Alice lives in Paris."}]}`
		}
		return fmt.Sprintf("```json\n{\"facts\": [{\"fact\": \"Alice lives in Berlin.\", \"supersedes\": [%q, \"mem_unknown\"]}]}\n```", oldID.Load())
	}}
	b := upstreamBundle(t, f, 10*time.Second)
	ctx := context.Background()
	run := func(text string) memory.ChatResult {
		res, err := b.svc.Chat(ctx, memory.ChatInput{Namespace: "a", Request: domain.ChatRequest{Model: "fake-llm", Messages: []domain.Message{user(text)}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1 := run("I live in Paris")
	if r1.Extraction != "ok" || len(r1.Written) != 3 || !strings.HasPrefix(r1.Completion.Choices[0].Content, "upstream reply") {
		t.Fatalf("first %+v", r1)
	}
	oldID.Store(r1.Written[2])
	b.now = b.now.Add(time.Hour)
	r2 := run("I moved: where do I live now?")
	if r2.Extraction != "ok" || len(r2.Superseded) != 1 || r2.Superseded[0] != r1.Written[2] {
		t.Fatalf("second %+v", r2)
	}
	if !strings.Contains(r2.Completion.Choices[0].Content, "with memory") {
		t.Fatalf("no memory block sent upstream: %q", r2.Completion.Choices[0].Content)
	}
	old, err := b.svc.Get(ctx, "a", r1.Written[2])
	if err != nil || old.InvalidFrom == nil || !old.InvalidFrom.Equal(b.now) || old.SupersededBy != r2.Written[2] {
		t.Fatalf("old fact %+v %v", old, err)
	}
}

func TestExtractionFailuresAreRecorded(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]string{"bad json": "{facts: nope", "timeout": "", "no facts key": `{"x": 1}`} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &fakeUpstream{extract: func(int) string { return answer }}
			timeout := 10 * time.Second
			if answer == "" {
				timeout = 300 * time.Millisecond // the fake never answers
			}
			b := upstreamBundle(t, f, timeout)
			res, err := b.svc.Chat(context.Background(), memory.ChatInput{Namespace: "f", Request: domain.ChatRequest{Model: "fake-llm", Messages: []domain.Message{user("remember that I like jazz")}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Extraction != "failed" || len(res.Written) != 2 {
				t.Fatalf("result %+v", res)
			}
			if got := f.extracts.Load(); got != 3 {
				t.Fatalf("%d extraction attempts, want 3", got)
			}
			fs, err := b.svc.Failures(context.Background(), "f")
			if err != nil || len(fs) != 1 || fs[0].Attempts != 3 || !strings.Contains(fs[0].Input, "jazz") {
				t.Fatalf("failures %+v %v", fs, err)
			}
		})
	}
}

func TestUpstreamErrorsMapToStatuses(t *testing.T) {
	t.Parallel()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }))
	defer garbage.Close()
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }))
	defer refused.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for url, kind := range map[string]domain.Kind{garbage.URL: domain.KindUpstream, refused.URL: domain.KindUpstream, closed.URL: domain.KindUnavailable} {
		up, _ := memory.NewUpstream(memory.UpstreamConfig{URL: url, Models: []string{"m"}})
		_, err := up.Generate(context.Background(), memory.GenerateInput{Model: "m", Messages: []domain.Message{user("hi")}})
		if e, ok := domain.AsError(err); !ok || e.Kind != kind {
			t.Fatalf("%s: %v, want %s", url, err, kind)
		}
	}
}

func TestParseFacts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"facts": []}`, 0, true},
		{`{"facts": [{"fact": "a"}, {"fact": "  "}]}`, 1, true},
		{"```json\n{\"facts\": [{\"fact\": \"a\", \"supersedes\": [\"mem_1\"]}]}\n```", 1, true},
		{`{"facts": "x"}`, 0, false},
		{`{}`, 0, false},
		{`{"facts": []} trailing`, 0, false},
		{``, 0, false},
	}
	for _, tt := range tests {
		got, err := memory.ParseFacts(tt.in)
		if (err == nil) != tt.ok || len(got) != tt.want {
			t.Errorf("ParseFacts(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func FuzzParseFacts(f *testing.F) {
	for _, s := range []string{`{"facts": [{"fact": "x", "supersedes": ["mem_1"]}]}`, "```json\n{}\n```", "{", `{"facts": null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		facts, err := memory.ParseFacts(s)
		if err == nil {
			for _, fc := range facts {
				if strings.TrimSpace(fc.Content) == "" {
					t.Fatal("blank fact accepted")
				}
			}
		}
	})
}

// TestAliases: an alias (svc-1) selects the first generator's first model,
// is listed after the models, and may not shadow a model.
func TestAliases(t *testing.T) {
	t.Parallel()
	b := setup(t, memory.Deps{}, memory.Config{Aliases: []string{"svc-1"}})
	if got := b.svc.Models(); len(got) != 2 || got[0] != memory.ExtractiveModel || got[1] != "svc-1" {
		t.Fatalf("models %v", got)
	}
	res, err := b.svc.Chat(context.Background(), memory.ChatInput{Namespace: "alias", Request: domain.ChatRequest{Model: "svc-1", Messages: []domain.Message{user("hello")}}})
	if err != nil || res.Completion.Model != memory.ExtractiveModel {
		t.Fatalf("svc-1: %v, answered by %q", err, res.Completion.Model)
	}
	if _, err := memory.New(memory.Config{Aliases: []string{memory.ExtractiveModel}}, memory.Deps{Store: b.store, Generators: []memory.Generator{memory.Extractive{}}}); err == nil {
		t.Fatal("an alias that shadows a model was accepted")
	}
}

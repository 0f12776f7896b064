package conformance_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// wireMemory is the spec's Memory.
type wireMemory struct {
	ID           string  `json:"id"`
	Namespace    string  `json:"namespace"`
	Kind         string  `json:"kind"`
	Content      string  `json:"content"`
	ExpiresAt    *string `json:"expires_at"`
	InvalidFrom  *string `json:"invalid_from"`
	SupersededBy *string `json:"superseded_by"`
	Score        *float64
}

type memoryReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Memory struct {
		Namespace  string   `json:"namespace"`
		Read       []string `json:"read"`
		Written    []string `json:"written"`
		Extraction string   `json:"extraction"`
	} `json:"memory"`
}

func memKey(t *testing.T, namespaces ...string) string {
	t.Helper()
	body := map[string]any{"scopes": []string{"memory"}}
	if len(namespaces) > 0 {
		body["namespaces"] = namespaces
	}
	_, secret := newKey(t, body)
	return secret
}

func memChat(t *testing.T, cred, ns string, body map[string]any, status int) response {
	t.Helper()
	path := "/v1/memory/chat/completions"
	if ns != "" {
		path += "?namespace=" + url.QueryEscape(ns)
	}
	return expect(t, do(t, req{method: "POST", path: path, cred: cred, body: body}), status)
}

func userTurn(model string, texts ...string) map[string]any {
	var msgs []any
	for i, tx := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": tx})
	}
	return map[string]any{"model": model, "messages": msgs}
}

func addMemory(t *testing.T, cred, ns, content string) wireMemory {
	t.Helper()
	var m wireMemory
	expect(t, do(t, req{method: "POST", path: "/v1/memory/namespaces/" + ns + "/memories", cred: cred, body: map[string]any{"content": content}}), http.StatusCreated).JSON(t, &m)
	return m
}

func TestMemoryChat(t *testing.T) {
	cred := memKey(t)
	var first memoryReply
	memChat(t, cred, "conf-chat", userTurn("memory-extractive", "My sister Ingrid lives in Tromsø and keeps bees."), http.StatusOK).JSON(t, &first)
	// The extractive model's reply only repeats memory and is not stored.
	if first.Memory.Namespace != "conf-chat" || len(first.Memory.Written) != 1 || first.Memory.Extraction != "none" {
		t.Fatalf("first turn report %+v", first.Memory)
	}
	var second memoryReply
	memChat(t, cred, "conf-chat", userTurn("memory-extractive", "Where does Ingrid live?"), http.StatusOK).JSON(t, &second)
	if len(second.Memory.Read) == 0 || second.Memory.Read[0] != first.Memory.Written[0] || !strings.Contains(second.Choices[0].Message.Content, "Tromsø") {
		t.Fatalf("second turn %+v", second)
	}
	// The default namespace is global.
	var global memoryReply
	memChat(t, cred, "", userTurn("memory-extractive", "Where does Ingrid live?"), http.StatusOK).JSON(t, &global)
	if global.Memory.Namespace != "global" || len(global.Memory.Read) != 0 {
		t.Fatalf("global %+v", global.Memory)
	}
	// Resending the history stores nothing twice.
	var again memoryReply
	body := userTurn("memory-extractive", "My sister Ingrid lives in Tromsø and keeps bees.", first.Choices[0].Message.Content)
	body["messages"] = append(body["messages"].([]any), map[string]any{"role": "user", "content": "And what does she keep?"})
	memChat(t, cred, "conf-chat", body, http.StatusOK).JSON(t, &again)
	if len(again.Memory.Written) != 1 {
		t.Fatalf("resent history wrote %v", again.Memory.Written)
	}
	// A zero budget injects nothing.
	zero := userTurn("memory-extractive", "Where does Ingrid live?")
	zero["memory"] = map[string]any{"budget_tokens": 0, "conversation_id": "zero"}
	var none memoryReply
	memChat(t, cred, "conf-chat", zero, http.StatusOK).JSON(t, &none)
	if len(none.Memory.Read) != 0 {
		t.Fatalf("budget 0 read %v", none.Memory.Read)
	}
	// Models lists the memory model.
	if resp := expect(t, do(t, req{method: "GET", path: "/v1/models", cred: cred}), http.StatusOK); !strings.Contains(string(resp.Body), `"memory-extractive"`) {
		t.Fatalf("models %s", resp.Body)
	}
}

func TestMemoryChatStream(t *testing.T) {
	cred := memKey(t)
	body := userTurn("memory-extractive", "Stream me something about kites.")
	body["stream"] = true
	resp := memChat(t, cred, "conf-stream", body, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(strings.NewReader(string(resp.Body)))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
		}
	}
	if len(events) < 3 || events[len(events)-1] != "[DONE]" || !strings.Contains(events[len(events)-2], `"usage"`) {
		t.Fatalf("events %v", events)
	}
	// The streamed turn was persisted.
	var list struct{ Data []wireMemory }
	expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces/conf-stream/memories", cred: cred}), http.StatusOK).JSON(t, &list)
	if len(list.Data) != 1 {
		t.Fatalf("%d memories after a streamed turn", len(list.Data))
	}
}

func TestMemoryChatErrors(t *testing.T) {
	cred := memKey(t)
	only := memKey(t, "mine")
	ok := userTurn("memory-extractive", "hello")
	tests := []struct {
		name   string
		cred   string
		ns     string
		body   any
		status int
		code   string
	}{
		{"unknown model", cred, "x", userTurn("gpt-unknown", "hi"), 404, "model_not_found"},
		{"bad namespace", cred, "bad/ns", ok, 400, "invalid_value"},
		{"namespace not allowed", only, "theirs", ok, 403, "namespace_not_allowed"},
		{"global not allowed", only, "", ok, 403, "namespace_not_allowed"},
		{"no credential", "", "x", ok, 401, "missing_credential"},
		{"budget too big", cred, "x", map[string]any{"model": "memory-extractive", "messages": ok["messages"], "memory": map[string]any{"budget_tokens": 99999}}, 400, "invalid_value"},
		{"no messages", cred, "x", map[string]any{"model": "memory-extractive", "messages": []any{}}, 400, "invalid_value"},
		{"n above one", cred, "x", map[string]any{"model": "memory-extractive", "messages": ok["messages"], "n": 2}, 400, "invalid_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/v1/memory/chat/completions"
			if tt.ns != "" {
				path += "?namespace=" + url.QueryEscape(tt.ns)
			}
			resp := expect(t, do(t, req{method: "POST", path: path, cred: tt.cred, body: tt.body}), tt.status)
			if e := resp.Err(t); e.Error.Code == nil || *e.Error.Code != tt.code {
				t.Fatalf("error %s", resp.Body)
			}
		})
	}
	big := userTurn("memory-extractive", strings.Repeat("x", 1<<20))
	expect(t, do(t, req{method: "POST", path: "/v1/memory/chat/completions", cred: cred, body: big}), http.StatusRequestEntityTooLarge)
}

func TestMemoryManagement(t *testing.T) {
	cred := memKey(t)
	ns := "conf-manage"
	base := "/v1/memory/namespaces/" + ns
	m := addMemory(t, cred, ns, "The spare key is under the blue flowerpot")
	if m.Kind != "note" || m.Namespace != ns || !strings.HasPrefix(m.ID, "mem_") {
		t.Fatalf("created %+v", m)
	}
	expect(t, do(t, req{method: "GET", path: base + "/memories/" + m.ID, cred: cred}), http.StatusOK)

	var found struct{ Data []wireMemory }
	expect(t, do(t, req{method: "GET", path: base + "/memories?q=" + url.QueryEscape("where is the spare key"), cred: cred}), http.StatusOK).JSON(t, &found)
	if len(found.Data) != 1 || found.Data[0].ID != m.ID {
		t.Fatalf("search %+v", found)
	}
	var patched wireMemory
	expect(t, do(t, req{method: "PATCH", path: base + "/memories/" + m.ID, cred: cred, body: map[string]any{"content": "The spare key is under the red flowerpot"}}), http.StatusOK).JSON(t, &patched)
	if !strings.Contains(patched.Content, "red") {
		t.Fatalf("patched %+v", patched)
	}
	var exp wireMemory
	expect(t, do(t, req{method: "PUT", path: base + "/memories/" + m.ID + "/expiry", cred: cred, body: map[string]any{"ttl_seconds": 3600}}), http.StatusOK).JSON(t, &exp)
	if exp.ExpiresAt == nil {
		t.Fatal("expiry not set")
	}
	expect(t, do(t, req{method: "PUT", path: base + "/memories/" + m.ID + "/expiry", cred: cred, body: map[string]any{"expires_at": nil}}), http.StatusOK).JSON(t, &exp)
	if exp.ExpiresAt != nil {
		t.Fatal("expiry not cleared")
	}
	// An expiry in the past hides the memory from listing and selection.
	gone := addMemory(t, cred, ns, "The wifi password is hunter2")
	expect(t, do(t, req{method: "PUT", path: base + "/memories/" + gone.ID + "/expiry", cred: cred, body: map[string]any{"expires_at": "2000-01-01T00:00:00Z"}}), http.StatusOK)
	expect(t, do(t, req{method: "GET", path: base + "/memories?q=wifi+password", cred: cred}), http.StatusOK).JSON(t, &found)
	if len(found.Data) != 0 {
		t.Fatalf("expired memory listed: %+v", found.Data)
	}
	var chat memoryReply
	memChat(t, cred, ns, userTurn("memory-extractive", "what is the wifi password"), http.StatusOK).JSON(t, &chat)
	for _, id := range chat.Memory.Read {
		if id == gone.ID {
			t.Fatal("expired memory selected")
		}
	}

	// Export, then import into a new namespace: the same memories arrive.
	exported := expect(t, do(t, req{method: "GET", path: base + "/export", cred: cred}), http.StatusOK)
	if ct := exported.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("export content type %q", ct)
	}
	lines := strings.Count(strings.TrimSpace(string(exported.Body)), "\n") + 1
	if lines != 3 {
		t.Fatalf("export has %d lines: %s", lines, exported.Body)
	}
	var imported struct{ Imported, Skipped int }
	expect(t, do(t, req{method: "POST", path: "/v1/memory/namespaces/conf-copy/import", cred: cred, body: exported.Body,
		header: map[string]string{"Content-Type": "application/x-ndjson"}}), http.StatusOK).JSON(t, &imported)
	if imported.Imported != lines || imported.Skipped != 0 {
		t.Fatalf("import %+v, want %d", imported, lines)
	}
	// Importing into the original namespace skips everything.
	expect(t, do(t, req{method: "POST", path: base + "/import", cred: cred, body: exported.Body,
		header: map[string]string{"Content-Type": "application/x-ndjson"}}), http.StatusOK).JSON(t, &imported)
	if imported.Imported != 0 || imported.Skipped != lines {
		t.Fatalf("re-import %+v", imported)
	}
	// A superseded fact cannot be edited.
	line := `{"id": "mem_oldfact1", "kind": "fact", "content": "Ada lives in Oslo", "invalid_from": "2026-01-01T00:00:00Z", "superseded_by": "mem_newfact1"}` + "\n"
	expect(t, do(t, req{method: "POST", path: base + "/import", cred: cred, body: line, header: map[string]string{"Content-Type": "application/x-ndjson"}}), http.StatusOK)
	resp := expect(t, do(t, req{method: "PATCH", path: base + "/memories/mem_oldfact1", cred: cred, body: map[string]any{"content": "x"}}), http.StatusConflict)
	if e := resp.Err(t); *e.Error.Code != "memory_superseded" {
		t.Fatalf("code %s", *e.Error.Code)
	}

	var nss struct {
		Data []struct {
			Name        string `json:"name"`
			MemoryCount int    `json:"memory_count"`
		}
	}
	expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces", cred: cred}), http.StatusOK).JSON(t, &nss)
	names := map[string]int{}
	for _, n := range nss.Data {
		names[n.Name] = n.MemoryCount
	}
	if names[ns] == 0 || names["conf-copy"] == 0 {
		t.Fatalf("namespaces %+v", nss.Data)
	}
	expect(t, do(t, req{method: "GET", path: base, cred: cred}), http.StatusOK)
	expect(t, do(t, req{method: "GET", path: base + "/failures", cred: cred}), http.StatusOK)
	expect(t, do(t, req{method: "DELETE", path: base + "/memories/" + m.ID, cred: cred}), http.StatusNoContent)
	expect(t, do(t, req{method: "GET", path: base + "/memories/" + m.ID, cred: cred}), http.StatusNotFound)
	expect(t, do(t, req{method: "DELETE", path: base + "/memories/" + m.ID, cred: cred}), http.StatusNotFound)
	var del struct{ Deleted int }
	expect(t, do(t, req{method: "DELETE", path: "/v1/memory/namespaces/conf-copy", cred: cred}), http.StatusOK).JSON(t, &del)
	if del.Deleted != lines {
		t.Fatalf("deleted %d, want %d", del.Deleted, lines)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces/conf-copy", cred: cred}), http.StatusNotFound)
	expect(t, do(t, req{method: "DELETE", path: "/v1/memory/namespaces/conf-copy", cred: cred}), http.StatusNotFound)
}

func TestMemoryManagementErrors(t *testing.T) {
	cred := memKey(t)
	only := memKey(t, "mine")
	chatOnly := chatCred(t)
	m := addMemory(t, cred, "conf-errors", "something")
	nd := map[string]string{"Content-Type": "application/x-ndjson"}
	tests := []struct {
		name   string
		r      req
		status int
	}{
		{"bad memory id", req{method: "GET", path: "/v1/memory/namespaces/conf-errors/memories/nope", cred: cred}, 400},
		{"bad namespace", req{method: "GET", path: "/v1/memory/namespaces/-bad-/memories", cred: cred}, 400},
		{"blank content", req{method: "POST", path: "/v1/memory/namespaces/conf-errors/memories", cred: cred, body: map[string]any{"content": ""}}, 400},
		{"unknown field", req{method: "POST", path: "/v1/memory/namespaces/conf-errors/memories", cred: cred, body: map[string]any{"content": "x", "colour": "red"}}, 400},
		{"empty patch", req{method: "PATCH", path: "/v1/memory/namespaces/conf-errors/memories/" + m.ID, cred: cred, body: map[string]any{}}, 400},
		{"expiry both", req{method: "PUT", path: "/v1/memory/namespaces/conf-errors/memories/" + m.ID + "/expiry", cred: cred, body: map[string]any{"ttl_seconds": 5, "expires_at": nil}}, 400},
		{"limit too big", req{method: "GET", path: "/v1/memory/namespaces/conf-errors/memories?limit=1000", cred: cred}, 400},
		{"bad cursor", req{method: "GET", path: "/v1/memory/namespaces/conf-errors/memories?cursor=zz", cred: cred}, 400},
		{"bad import line", req{method: "POST", path: "/v1/memory/namespaces/conf-errors/import", cred: cred, body: "{\"content\": \"ok\"}\nnot json\n", header: nd}, 400},
		{"import without content", req{method: "POST", path: "/v1/memory/namespaces/conf-errors/import", cred: cred, body: "{\"kind\": \"note\"}\n", header: nd}, 400},
		{"import too large", req{method: "POST", path: "/v1/memory/namespaces/conf-errors/import", cred: cred, body: strings.Repeat("{\"content\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n", 40000), header: nd}, 413},
		{"patch too large", req{method: "PATCH", path: "/v1/memory/namespaces/conf-errors/memories/" + m.ID, cred: cred, body: map[string]any{"content": strings.Repeat("y", 1<<20)}}, 413},
		{"create too large", req{method: "POST", path: "/v1/memory/namespaces/conf-errors/memories", cred: cred, body: map[string]any{"content": strings.Repeat("y", 1<<20)}}, 413},
		{"no credential", req{method: "GET", path: "/v1/memory/namespaces"}, 401},
		{"wrong scope", req{method: "GET", path: "/v1/memory/namespaces", cred: chatOnly}, 403},
		{"namespace not allowed", req{method: "GET", path: "/v1/memory/namespaces/conf-errors/memories", cred: only}, 403},
		{"delete namespace not allowed", req{method: "DELETE", path: "/v1/memory/namespaces/conf-errors", cred: only}, 403},
		{"export not allowed", req{method: "GET", path: "/v1/memory/namespaces/conf-errors/export", cred: only}, 403},
		{"missing memory", req{method: "GET", path: "/v1/memory/namespaces/conf-errors/memories/mem_missing", cred: cred}, 404},
		{"missing namespace", req{method: "GET", path: "/v1/memory/namespaces/conf-nothing", cred: cred}, 404},
		{"expiry of missing", req{method: "PUT", path: "/v1/memory/namespaces/conf-errors/memories/mem_missing/expiry", cred: cred, body: map[string]any{"ttl_seconds": 5}}, 404},
		{"patch missing", req{method: "PATCH", path: "/v1/memory/namespaces/conf-errors/memories/mem_missing", cred: cred, body: map[string]any{"content": "x"}}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, do(t, tt.r), tt.status).Err(t)
		})
	}
	// Listing namespaces shows only the allowed ones.
	addMemory(t, only, "mine", "my own note")
	var nss struct{ Data []struct{ Name string } }
	expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces", cred: only}), http.StatusOK).JSON(t, &nss)
	if len(nss.Data) != 1 || nss.Data[0].Name != "mine" {
		t.Fatalf("allowed namespaces %+v", nss.Data)
	}
}

// TestMemoryIsolation: a memory of one namespace is invisible from another
// through every endpoint.
func TestMemoryIsolation(t *testing.T) {
	cred := memKey(t)
	secret := addMemory(t, cred, "iso-a", "The launch code of project zephyr is 7781")
	other := "/v1/memory/namespaces/iso-b"
	addMemory(t, cred, "iso-b", "an unrelated note about zephyr winds")
	for _, r := range []req{
		{method: "GET", path: other + "/memories/" + secret.ID},
		{method: "PATCH", path: other + "/memories/" + secret.ID, body: map[string]any{"content": "stolen"}},
		{method: "PUT", path: other + "/memories/" + secret.ID + "/expiry", body: map[string]any{"ttl_seconds": 1}},
		{method: "DELETE", path: other + "/memories/" + secret.ID},
	} {
		r.cred = cred
		expect(t, do(t, r), http.StatusNotFound)
	}
	for _, path := range []string{other + "/memories", other + "/memories?q=" + url.QueryEscape("launch code zephyr 7781"), other + "/export"} {
		if body := expect(t, do(t, req{method: "GET", path: path, cred: cred}), http.StatusOK).Body; strings.Contains(string(body), secret.ID) || strings.Contains(string(body), "7781") {
			t.Fatalf("%s leaks: %s", path, body)
		}
	}
	var chat memoryReply
	memChat(t, cred, "iso-b", userTurn("memory-extractive", "What is the launch code of project zephyr?"), http.StatusOK).JSON(t, &chat)
	if strings.Contains(chat.Choices[0].Message.Content, "7781") {
		t.Fatalf("chat leaks: %+v", chat)
	}
	for _, id := range chat.Memory.Read {
		if id == secret.ID {
			t.Fatal("chat read another namespace's memory")
		}
	}
	// Importing a line with another namespace's id gives it a fresh id.
	line := fmt.Sprintf(`{"id": %q, "content": "copy"}`+"\n", secret.ID)
	expect(t, do(t, req{method: "POST", path: other + "/import", cred: cred, body: line, header: map[string]string{"Content-Type": "application/x-ndjson"}}), http.StatusOK)
	if got := expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces/iso-a/memories/" + secret.ID, cred: cred}), http.StatusOK); !strings.Contains(string(got.Body), "7781") {
		t.Fatalf("original changed: %s", got.Body)
	}
}

// TestMemoryOpenAISDK drives the memory operation with the official OpenAI
// Go SDK: base URL …/v1/memory, namespace as a query option.
func TestMemoryOpenAISDK(t *testing.T) {
	client := openai.NewClient(option.WithBaseURL(srv.url+"/v1/memory/"), option.WithAPIKey(memKey(t)),
		option.WithHTTPClient(recorder.Client()), option.WithMaxRetries(0), option.WithQuery("namespace", "conf-sdk"))
	ctx := context.Background()
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "memory-extractive",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Our team offsite is in Lisbon in March.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "memory-extractive",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where is the team offsite?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Choices[0].Message.Content, "Lisbon") || c.Object != "chat.completion" {
		t.Fatalf("reply %+v", c.Choices)
	}
	if raw := c.JSON.ExtraFields["memory"].Raw(); !strings.Contains(raw, `"read"`) {
		t.Fatalf("memory report not in the extra fields: %q", raw)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "memory-extractive",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where is the offsite again?")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(acc.Choices[0].Message.Content, "Lisbon") {
		t.Fatalf("streamed %q", acc.Choices[0].Message.Content)
	}
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model: %v", err)
	}
}

// TestMemoryEndpointsAuth: every memory endpoint answers 401 without a
// credential, 403 to a key without the memory scope or outside its
// namespace allow-list, and 400 to a bad namespace name.
func TestMemoryEndpointsAuth(t *testing.T) {
	cred := memKey(t)
	only := memKey(t, "mine")
	chatOnly := chatCred(t)
	m := addMemory(t, cred, "auth-ns", "a note")
	nd := map[string]string{"Content-Type": "application/x-ndjson"}
	endpoints := func(ns string) []req {
		base := "/v1/memory/namespaces/" + ns
		return []req{
			{method: "GET", path: base},
			{method: "DELETE", path: base},
			{method: "GET", path: base + "/memories"},
			{method: "POST", path: base + "/memories", body: map[string]any{"content": "x"}},
			{method: "GET", path: base + "/memories/" + m.ID},
			{method: "PATCH", path: base + "/memories/" + m.ID, body: map[string]any{"content": "x"}},
			{method: "DELETE", path: base + "/memories/" + m.ID},
			{method: "PUT", path: base + "/memories/" + m.ID + "/expiry", body: map[string]any{"ttl_seconds": 60}},
			{method: "GET", path: base + "/export"},
			{method: "POST", path: base + "/import", body: "{\"content\": \"x\"}\n", header: nd},
			{method: "GET", path: base + "/failures"},
		}
	}
	for _, r := range endpoints("auth-ns") {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			expect(t, do(t, r), http.StatusUnauthorized)
			r.cred = chatOnly
			expect(t, do(t, r), http.StatusForbidden)
			r.cred = only
			expect(t, do(t, r), http.StatusForbidden)
		})
	}
	for _, r := range endpoints("-bad-") {
		t.Run("bad namespace "+r.method+" "+r.path, func(t *testing.T) {
			r.cred = cred
			expect(t, do(t, r), http.StatusBadRequest)
		})
	}
	// Nothing above changed the memory.
	got := expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces/auth-ns/memories/" + m.ID, cred: cred}), http.StatusOK)
	if !strings.Contains(string(got.Body), `"a note"`) {
		t.Fatalf("memory changed: %s", got.Body)
	}
}

// TestMemoryChatSvc1: a client written for the interface sends its one model
// id, svc-1, to the memory operation too; it selects the configured memory
// model (here the extractive one), and GET /v1/models lists svc-1 once and
// says what it selects there.
func TestMemoryChatSvc1(t *testing.T) {
	client := openai.NewClient(option.WithBaseURL(srv.url+"/v1/memory/"), option.WithAPIKey(memKey(t)),
		option.WithHTTPClient(recorder.Client()), option.WithMaxRetries(0), option.WithQuery("namespace", "conf-svc1"))
	ctx := context.Background()
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "svc-1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("The quarterly review moved to the Oslo office.")},
	}); err != nil {
		t.Fatalf("svc-1 on the memory operation: %v", err)
	}
	c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "svc-1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where is the quarterly review?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Choices[0].Message.Content, "Oslo") || c.Model != "memory-extractive" {
		t.Fatalf("reply by %q: %q", c.Model, c.Choices[0].Message.Content)
	}

	models := openai.NewClient(option.WithBaseURL(srv.url+"/v1/"), option.WithAPIKey(memKey(t)),
		option.WithHTTPClient(recorder.Client()), option.WithMaxRetries(0))
	page, err := models.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range page.Data {
		if m.ID == "svc-1" {
			n++
			if d := m.JSON.ExtraFields["description"].Raw(); !strings.Contains(d, "memory-extractive") {
				t.Fatalf("svc-1's description does not name the memory model it selects: %s", d)
			}
		}
	}
	if n != 1 {
		t.Fatalf("svc-1 listed %d times", n)
	}
}

// TestStreamFirstChunkFingerprint: the first chunk of a stream carries the
// system_fingerprint as every later chunk does, on both chat operations,
// when the reply's fingerprint is known before the turn runs.
func TestStreamFirstChunkFingerprint(t *testing.T) {
	ctx := context.Background()
	for _, op := range []struct{ base, model string }{{"/v1/", "svc-1"}, {"/v1/memory/", "memory-extractive"}} {
		client := openai.NewClient(option.WithBaseURL(srv.url+op.base), option.WithAPIKey(srv.admin),
			option.WithHTTPClient(recorder.Client()), option.WithMaxRetries(0), option.WithQuery("namespace", "conf-fp"))
		params := openai.ChatCompletionNewParams{Model: op.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where is the harbour?")}}
		if op.model == "svc-1" {
			params.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Use search, text_search, read and report_helpful_ids.")}, params.Messages...)
			params.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "search"})}
		}
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		n := 0
		for stream.Next() {
			// Read from the raw chunk: the SDK marks the typed field deprecated.
			if fp := stream.Current().JSON.SystemFingerprint.Raw(); fp == "" || fp == "null" || fp == `""` {
				t.Errorf("%s: chunk %d has no system_fingerprint", op.model, n)
			}
			n++
		}
		if err := stream.Err(); err != nil || n < 2 {
			t.Fatalf("%s: %d chunks, %v", op.model, n, err)
		}
	}
}

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"capsuled/internal/chat"
	"capsuled/internal/domain"
	"capsuled/internal/engine/builtin"
)

const benchSystem = `You are a retrieval agent. Tools:
- search: semantic search. Arguments: {"query": string, "limit": integer}.
- text_search: exact keyword search. Arguments: {"query": string, "limit": integer}.
- read: a document's full text. Arguments: {"id": string}.
- report_helpful_ids: report the ids that answer the question. Arguments: {"ids": [string]}.`

// benchTurnBody is a late svc-1 turn as an agent harness sends it: the
// system prompt, the question, two tool-calling replies and their four
// result lists of ten hits each (about 30 KB).
func benchTurnBody(tb testing.TB) []byte {
	tb.Helper()
	hits := func(prefix string) string {
		var list []map[string]string
		for i := range 10 {
			list = append(list, map[string]string{"id": fmt.Sprintf("%s%d", prefix, i), "title": fmt.Sprintf("Title %s %d", prefix, i),
				"content": strings.Repeat("The Quick Brown Fox jumped over Lazy Dogs in Paris and London during 1999. ", 8)})
		}
		b, _ := json.Marshal(list)
		return string(b)
	}
	msgs := []any{
		map[string]any{"role": "system", "content": benchSystem},
		map[string]any{"role": "user", "content": "Which city hosted the event where the band that recorded Abbey Road first played?"},
	}
	for turn := range 2 {
		var calls []any
		for i := range 2 {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", turn, i), "type": "function",
				"function": map[string]any{"name": "search", "arguments": fmt.Sprintf(`{"query":"query %d %d","limit":10}`, turn, i)}})
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "<think>\nsearching\n</think>\n\n", "tool_calls": calls})
		for i := range 2 {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": fmt.Sprintf("call_%d_%d", turn, i), "content": hits(fmt.Sprintf("d%d%d_", turn, i))})
		}
	}
	body, err := json.Marshal(map[string]any{"model": "svc-1", "messages": msgs,
		"tools":       []any{map[string]any{"type": "function", "function": map[string]any{"name": "dummy"}}},
		"temperature": 0.6, "top_k": 20, "max_tokens": 2048})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// nopChat is a fake of the Chat service for the benchmark of the HTTP
// layer alone: it answers every turn with the same short completion.
type nopChat struct{}

func (nopChat) Check(*domain.ChatRequest) error { return nil }
func (nopChat) Complete(_ context.Context, req *domain.ChatRequest) (*domain.Completion, error) {
	return &domain.Completion{ID: "chatcmpl-x", Model: req.Model, Created: time.Unix(0, 0),
		Choices: []domain.Choice{{Content: "ok", FinishReason: domain.FinishStop}}}, nil
}

// BenchmarkChatTurn posts a late svc-1 turn through the whole handler (gate,
// spec validation, conversion, service, rendering). builtin runs the real
// built-in engine; http-layer answers with a fake service, so that it
// measures what the HTTP layer costs per turn: reading, validating and
// converting the body, and writing the reply.
func BenchmarkChatTurn(b *testing.B) {
	body := benchTurnBody(b)
	svc, err := chat.New(chat.Config{Engine: builtin.New(builtin.Config{}), Counter: chat.PreTokenCounter{}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		chat Chat
	}{{"http-layer", nopChat{}}, {"builtin", svc}} {
		b.Run(c.name, func(b *testing.B) {
			h, _ := newTestServer(b, Deps{Chat: c.chat})
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer k")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

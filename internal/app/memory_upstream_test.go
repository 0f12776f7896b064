package app_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/app"
)

// TestMemoryChatUpstreamOverHTTP drives the memory operation with the
// upstream generator through capsuled's HTTP API and the OpenAI Go SDK: the
// reply is the upstream's, the second turn's prompt carries the memory block
// with the first turn, and the memory report names what was written and read.
// The upstream is a fake OpenAI-compatible server (httptest).
func TestMemoryChatUpstreamOverHTTP(t *testing.T) {
	t.Parallel()
	prompts := make(chan string, 16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model          string           `json:"model"`
			Messages       []map[string]any `json:"messages"`
			ResponseFormat map[string]any   `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		content := `{"facts": []}` // extraction
		if req.ResponseFormat == nil {
			var all []string
			for _, m := range req.Messages {
				s, _ := m["content"].(string)
				all = append(all, s)
			}
			prompts <- strings.Join(all, "\n")
			content = "upstream reply"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "up-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
	}))
	t.Cleanup(up.Close)

	ctx := t.Context()
	base, admin := serveWithAdmin(t, app.Config{Memory: app.MemoryConfig{UpstreamURL: up.URL + "/v1", UpstreamModels: "fake-llm", Extract: true}})

	client := openai.NewClient(option.WithBaseURL(base+"memory/"), option.WithAPIKey(admin),
		option.WithMaxRetries(0), option.WithQuery("namespace", "upstream-http"))
	turn := func(text string) *openai.ChatCompletion {
		t.Helper()
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "fake-llm",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}})
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != "upstream reply" || c.Model != "fake-llm" {
			t.Fatalf("reply %+v (model %q), want the upstream's", c.Choices, c.Model)
		}
		return c
	}
	first := turn("My sister Ana keeps bees in Porto.")
	<-prompts
	if raw := first.JSON.ExtraFields["memory"].Raw(); !strings.Contains(raw, `"written"`) || !strings.Contains(raw, "mem_") {
		t.Fatalf("first turn's memory report names nothing written: %s", raw)
	}
	second := turn("Where does my sister keep bees?")
	if p := <-prompts; !strings.Contains(p, "Ana keeps bees in Porto") {
		t.Fatalf("second prompt lacks the remembered turn:\n%s", p)
	}
	if raw := second.JSON.ExtraFields["memory"].Raw(); !strings.Contains(raw, `"read"`) || !strings.Contains(raw, "mem_") {
		t.Fatalf("second turn's memory report names nothing read: %s", raw)
	}

	// An unknown model is refused with 404.
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown model: %v, want 404", err)
	}
}

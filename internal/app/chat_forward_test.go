package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/app"
)

// TestBothChatOperationsForwardTheSameFields sends the same request, with
// vLLM's sampling extras and the prefill flags, through the HTTP API with the
// OpenAI Go SDK to svc-1 served by the upstream engine and to memory chat
// served by an upstream model, and checks that both upstream requests carry
// the same fields, as vLLM expects them (continue_final_message and
// add_generation_prompt at the top level), and neither carries capsuled's
// extensions or echo. The upstream is a fake OpenAI-compatible server
// (httptest) that records the bodies.
func TestBothChatOperationsForwardTheSameFields(t *testing.T) {
	t.Parallel()
	bodies := make(chan map[string]any, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if body["response_format"] == nil { // not a fact extraction
			bodies <- body
		}
		content := `{"facts": []}`
		if body["response_format"] == nil {
			content = " continues."
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "up-1", "object": "chat.completion", "created": 1, "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
	}))
	t.Cleanup(up.Close)

	ctx := t.Context()
	base, admin := serveWithAdmin(t, app.Config{
		Chat:   app.ChatConfig{Engine: "upstream", UpstreamURL: up.URL + "/v1", UpstreamModel: "fake-llm"},
		Memory: app.MemoryConfig{UpstreamURL: up.URL + "/v1", UpstreamModels: "fake-llm"}})
	params := func(model string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Temperature: openai.Float(0.6), Seed: openai.Int(7),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where do bees live?"), openai.AssistantMessage("Bees live")}}
	}
	extras := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(admin),
		option.WithJSONSet("top_k", 20), option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}),
		option.WithJSONSet("continue_final_message", true), option.WithJSONSet("add_generation_prompt", false),
		option.WithJSONSet("echo", true), option.WithJSONSet("memory", map[string]any{"budget_tokens": 50})}

	svc1 := openai.NewClient(append(extras, option.WithBaseURL(base))...)
	if _, err := svc1.Chat.Completions.New(ctx, params("svc-1")); err != nil {
		t.Fatal(err)
	}
	fromSvc1 := <-bodies
	mem := openai.NewClient(append(extras, option.WithBaseURL(base+"memory/"), option.WithQuery("namespace", "forward"))...)
	if _, err := mem.Chat.Completions.New(ctx, params("fake-llm")); err != nil {
		t.Fatal(err)
	}
	fromMemory := <-bodies

	for _, b := range []map[string]any{fromSvc1, fromMemory} {
		if b["continue_final_message"] != true || b["add_generation_prompt"] != false || b["top_k"] != 20.0 || b["temperature"] != 0.6 ||
			b["seed"] != 7.0 || b["model"] != "fake-llm" || b["echo"] != nil || b["memory"] != nil {
			t.Errorf("upstream body %v: want the prefill flags and sampling extras as sent, the upstream model, no echo or memory", b)
		}
	}
	// Same fields apart from the prompt (memory chat may add its memory block).
	delete(fromSvc1, "messages")
	delete(fromMemory, "messages")
	if diff := cmp.Diff(fromSvc1, fromMemory); diff != "" {
		t.Errorf("svc-1 and memory chat forward different fields (-svc-1 +memory):\n%s", diff)
	}
}

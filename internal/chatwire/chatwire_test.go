package chatwire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"capsuled/internal/domain"
)

func TestBody(t *testing.T) {
	t.Parallel()
	closed := true
	msgs := []domain.Message{
		domain.TextMessage(domain.RoleSystem, "s"),
		{Role: domain.RoleUser, Name: "ana", Content: []domain.Part{{Type: domain.PartText, Text: "a"}, {Type: domain.PartText, Text: "b"}}},
		{Role: domain.RoleAssistant, ToolCalls: []domain.ToolCall{{ID: "c1", Name: "search", Arguments: `{"query":"x"}`}}},
		{Role: domain.RoleTool, ToolCallID: "c1", Content: []domain.Part{{Type: domain.PartText, Text: "[]"}}},
		{Role: "narrator", Reasoning: "r", Content: []domain.Part{{Type: domain.PartThinking, Text: "t", Closed: &closed}, {Type: domain.PartRefusal, Text: "no"}}},
	}
	req := &domain.ChatRequest{Model: "svc-1", Messages: msgs, Passthrough: map[string]any{"top_k": json.Number("20"), "model": "client's", "continue_final_message": true}}
	got, err := json.Marshal(Body("up-model", msgs, req, true))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"continue_final_message":true,"messages":[{"content":"s","role":"system"},` +
		`{"content":[{"text":"a","type":"text"},{"text":"b","type":"text"}],"name":"ana","role":"user"},` +
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"query\":\"x\"}","name":"search"},"id":"c1","type":"function"}]},` +
		`{"content":"[]","role":"tool","tool_call_id":"c1"},` +
		`{"content":[{"closed":true,"thinking":"t","type":"thinking"},{"refusal":"no","type":"refusal"}],"reasoning":"r","role":"narrator"}],` +
		`"model":"up-model","stream":true,"stream_options":{"include_usage":true},"top_k":20}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	plain, _ := json.Marshal(Body("m", msgs[:1], &domain.ChatRequest{}, false))
	if string(plain) != `{"messages":[{"content":"s","role":"system"}],"model":"m"}` {
		t.Errorf("without pass-through or stream: %s", plain)
	}
}

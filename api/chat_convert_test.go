package api

import (
	"encoding/json"
	"testing"

	"capsuled/gen"
	"capsuled/internal/domain"
)

func convert(t *testing.T, raw string) (*domain.ChatRequest, error) {
	t.Helper()
	var body gen.ChatCompletionRequest
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatal(err)
	}
	return ChatRequestFromWire(&body, []byte(raw))
}

func TestChatRequestFromWire(t *testing.T) {
	t.Parallel()
	r, err := convert(t, `{"model":"svc-1","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"[]"}],
		"tools":[{"type":"function","function":{"name":"dummy"}}],"stop":"x","max_tokens":7,"n":2,"stream":true,"stream_options":{"include_usage":false},"temperature":null}`)
	if err != nil {
		t.Fatal(err)
	}
	if !r.ToolStub || r.ToolChoice.Mode != domain.ToolChoiceAuto || *r.MaxTokens != 7 || r.N != 2 || !r.Stream || r.IncludeUsage || len(r.Stop) != 1 {
		t.Fatalf("%+v", r)
	}
	if r.Messages[1].Text() != "ab" || r.Messages[2].ToolCalls[0].Name != "search" || r.Messages[3].ToolCallID != "c1" {
		t.Fatalf("messages %+v", r.Messages)
	}
	if !r.Set["stop"] || r.Set["temperature"] || !r.IncludeReasoning || !r.ParallelToolCalls || !r.AddGenerationPrompt {
		t.Fatalf("set %v", r.Set)
	}
	r, err = convert(t, `{"model":"svc-1","messages":[{"role":"user","content":"q"}]}`)
	if err != nil || r.ToolStub || r.ToolChoice.Mode != domain.ToolChoiceNone || r.N != 1 || !r.IncludeUsage {
		t.Fatalf("defaults %+v %v", r, err)
	}
	for _, bad := range []string{
		`{"model":"svc-1","messages":[{"role":"user","content":"q"}],"tools":[{"function":{"name":"a"}},{"function":{"name":"b"}}]}`,
		`{"model":"svc-1","messages":[{"role":"user","content":"q"}],"tool_choice":"auto"}`,
		`{"model":"svc-1","messages":[{"role":"assistant","content":"q"}],"continue_final_message":true}`,
		`{"model":"svc-1","messages":[{"role":"user","content":"q"}],"continue_final_message":true,"add_generation_prompt":false}`,
		`{"model":"svc-1","messages":[{"role":"user","content":"q"}],"max_tokens":1,"max_completion_tokens":2}`,
	} {
		if _, err := convert(t, bad); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%s: err %v", bad, err)
		}
	}
}

func FuzzChatRequestFromWire(f *testing.F) {
	for _, s := range []string{
		`{"model":"svc-1","messages":[{"role":"user","content":"q"}]}`,
		`{"model":"svc-1","messages":[{"role":"x","content":[{"type":"thinking","thinking":"t"}]}],"tools":[{"function":{"name":"d"}}],"tool_choice":{"function":{"name":"read"}},"stop":["a",""]}`,
		`{"model":"m","messages":[],"n":0,"max_tokens":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var body gen.ChatCompletionRequest
		if json.Unmarshal(raw, &body) != nil {
			return
		}
		r, err := ChatRequestFromWire(&body, raw)
		if err != nil {
			if _, ok := domain.AsError(err); !ok {
				t.Fatalf("error %v is not a *domain.Error", err)
			}
			return
		}
		if r.N < 1 || len(r.Messages) == 0 {
			t.Fatalf("accepted %+v", r)
		}
		c := CompletionToWire(&domain.Completion{Choices: []domain.Choice{{Content: "x", ToolCalls: []domain.ToolCall{{Name: "a"}}}}})
		_ = CompletionChunks(&domain.Completion{Choices: []domain.Choice{{Content: r.Model}}}, ChunkOptions{IncludeUsage: true, ContinuousUsage: true})
		_ = c
	})
}

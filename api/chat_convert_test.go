package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"capsuled/internal/domain"
)

// decodeValue decodes a body as the spec's validation does.
func decodeValue(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func convert(t *testing.T, raw string) (*domain.ChatRequest, error) {
	t.Helper()
	v, err := decodeValue([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return ChatRequestFromWire(v)
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
	if r.Passthrough["stop"] != "x" || r.Temperature != nil || !r.IncludeReasoning || !r.ParallelToolCalls || !r.AddGenerationPrompt {
		t.Fatalf("%+v", r)
	}
	for _, k := range []string{"model", "messages", "stream", "stream_options", "temperature"} {
		if _, ok := r.Passthrough[k]; ok {
			t.Errorf("pass-through holds %s: %v", k, r.Passthrough)
		}
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "dummy" || r.Tools[0].Type != "function" {
		t.Fatalf("tools %+v", r.Tools)
	}
	// full definitions: several tools, or one with a description or parameters
	r, err = convert(t, `{"model":"svc-1","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"grep_docs","description":"exact match",
		"parameters":{"type":"object","properties":{"pattern":{"type":"string"}}}}},{"type":"function","function":{"name":"open_doc"}}]}`)
	if err != nil || !r.ToolStub || len(r.Tools) != 2 || r.Tools[0].Name != "grep_docs" || r.Tools[0].Description != "exact match" || r.Tools[0].Parameters["type"] != "object" || r.Tools[1].Type != "function" {
		t.Fatalf("definitions %+v %v", r, err)
	}
	if r, err = convert(t, `{"model":"svc-1","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"dummy"}}]}`); err != nil || !r.ToolStub || len(r.Tools) != 1 || r.Tools[0].Name != "dummy" {
		t.Fatalf("the stub: %+v %v", r, err)
	}
	r, err = convert(t, `{"model":"svc-1","messages":[{"role":"user","content":"q"}]}`)
	if err != nil || r.ToolStub || r.ToolChoice.Mode != domain.ToolChoiceNone || r.N != 1 || !r.IncludeUsage {
		t.Fatalf("defaults %+v %v", r, err)
	}
	// Typed fields keep the client's precision; upstream-only fields pass
	// through as sent, unknown ones too (vLLM ignores what it does not know).
	r, err = convert(t, `{"model":"svc-1","messages":[{"role":"user","content":"q"}],"temperature":0.6,"top_p":0.95,"seed":7,
		"include_stop_str_in_output":true,"top_k":20,"chat_template_kwargs":{"enable_thinking":false},"echo":true,"memory":{"budget_tokens":5},"vllm_xargs":{"a":1}}`)
	if err != nil {
		t.Fatal(err)
	}
	if *r.Temperature != 0.6 || *r.TopP != 0.95 || *r.Seed != 7 || !r.IncludeStopStr || !r.Echo {
		t.Fatalf("typed %+v", r)
	}
	want := map[string]any{"temperature": json.Number("0.6"), "top_p": json.Number("0.95"), "seed": json.Number("7"), "include_stop_str_in_output": true,
		"top_k": json.Number("20"), "chat_template_kwargs": map[string]any{"enable_thinking": false}, "vllm_xargs": map[string]any{"a": json.Number("1")}}
	if diff := cmp.Diff(want, r.Passthrough); diff != "" {
		t.Errorf("pass-through (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`{"model":"svc-1","messages":[{"role":"user","content":"q"}],"tools":[{"function":{"name":"a"}},{"function":{"name":"a"}}]}`,
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
		body, err := decodeValue(raw)
		if err != nil {
			return
		}
		r, err := ChatRequestFromWire(body)
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

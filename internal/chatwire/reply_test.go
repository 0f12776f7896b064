package chatwire

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"capsuled/internal/domain"
	"capsuled/internal/oai"
	"capsuled/internal/reasoning"
	"capsuled/internal/toolcall"
)

func TestChoice(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	structured := oai.Message{Content: str(""), ToolCalls: []oai.ToolCall{{ID: "c1"}, {}}}
	structured.ToolCalls[0].Function.Name, structured.ToolCalls[0].Function.Arguments = "search", `{"query": "x"}`
	structured.ToolCalls[1].Function.Name, structured.ToolCalls[1].Function.Arguments = "read", `not json`
	text := oai.Message{Content: str("<think>why</think>ok <tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"y\"}}</tool_call>")}
	hermes, err := toolcall.Lookup("hermes")
	if err != nil {
		t.Fatal(err)
	}
	qwen3, err := reasoning.Lookup("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		m      oai.Message
		finish string
		p      Parsers
		want   domain.Choice
	}{
		{"structured calls, no parsers", structured, "stop", Parsers{}, domain.Choice{FinishReason: domain.FinishToolCalls, ToolCalls: []domain.ToolCall{
			{ID: "c1", Type: "function", Name: "search", Arguments: `{"query":"x"}`},
			{ID: CallID(1, "read", "{}"), Type: "function", Name: "read", Arguments: "{}"}}}},
		{"text left as is without parsers", text, "length", Parsers{}, domain.Choice{Content: *text.Content, FinishReason: domain.FinishLength}},
		{"text parsed", text, "stop", Parsers{Tools: &hermes, Reasoning: &qwen3}, domain.Choice{Content: "ok", Reasoning: "why", FinishReason: domain.FinishToolCalls,
			ToolCalls: []domain.ToolCall{{ID: CallID(0, "search", `{"query":"y"}`), Type: "function", Name: "search", Arguments: `{"query":"y"}`}}}},
		{"any other finish is stop", oai.Message{Content: str("hi")}, "eos", Parsers{}, domain.Choice{Content: "hi", FinishReason: domain.FinishStop}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Choice(0, tc.m, tc.finish, tc.p)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("-want +got\n%s", d)
			}
		})
	}
}

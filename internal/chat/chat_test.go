package chat

import (
	"context"
	"strings"
	"testing"

	"capsuled/internal/domain"
)

// fakeCounter counts space-separated words: a stand-in for the WordPiece
// tokenizer in unit tests.
type fakeCounter struct{}

func (fakeCounter) CountTokens(s string) int { return len(strings.Fields(s)) }

// fakeEngine returns a fixed choice.
type fakeEngine struct{ choice domain.Choice }

func (fakeEngine) Name() string                    { return "fake" }
func (fakeEngine) Check(*domain.ChatRequest) error { return nil }
func (f fakeEngine) Generate(context.Context, *domain.ChatRequest) ([]domain.Choice, *domain.Usage, error) {
	return []domain.Choice{f.choice}, nil, nil
}

func TestShape(t *testing.T) {
	t.Parallel()
	base := domain.Choice{Reasoning: "I plan.", Content: "", ToolCalls: []domain.ToolCall{{ID: "c", Name: "search", Arguments: `{"query":"q"}`}}}
	text := domain.Choice{Reasoning: "think", Content: "one two three four five"}
	max2 := 2
	tests := []struct {
		name    string
		choice  domain.Choice
		req     domain.ChatRequest
		content string
		finish  string
		calls   int
	}{
		{"reasoning in think", base, domain.ChatRequest{IncludeReasoning: true}, "<think>\nI plan.\n</think>\n\n", "tool_calls", 1},
		{"reasoning off", base, domain.ChatRequest{}, "", "tool_calls", 1},
		{"stop cuts and drops calls", text, domain.ChatRequest{Stop: []string{"three"}}, "one two ", "stop", 0},
		{"length", text, domain.ChatRequest{MaxTokens: &max2}, "one two ", "length", 0},
		{"echo", text, domain.ChatRequest{Echo: true, Messages: []domain.Message{domain.TextMessage("assistant", "pre ")}}, "pre one two three four five", "stop", 0},
		{"inline think stripped", domain.Choice{Content: "<think>x</think>\nanswer"}, domain.ChatRequest{}, "answer", "stop", 0},
		// continue_final_message: the reply continues the prefill, with no
		// new reasoning block inside it.
		{"continue plain prefill", text, domain.ChatRequest{IncludeReasoning: true, ContinueFinalMessage: true, Messages: withPrefill("The answer is")},
			" one two three four five", "stop", 0},
		{"continue prefill ending in a space", text, domain.ChatRequest{IncludeReasoning: true, ContinueFinalMessage: true, Messages: withPrefill("The answer is ")},
			"one two three four five", "stop", 0},
		{"continue open reasoning", base, domain.ChatRequest{IncludeReasoning: true, ContinueFinalMessage: true, Messages: withPrefill("<think>\nLet me")},
			" I plan.\n</think>\n\n", "tool_calls", 1},
		{"continue after closed reasoning", text, domain.ChatRequest{IncludeReasoning: true, ContinueFinalMessage: true, Messages: withPrefill("<think>r</think>\n\nSo")},
			" one two three four five", "stop", 0},
		{"continue drops the engine's inline block", domain.Choice{Content: "<think>x</think>answer"}, domain.ChatRequest{IncludeReasoning: true, ContinueFinalMessage: true, Messages: withPrefill("An")},
			" answer", "stop", 0},
		// echo: the prefill is prepended, and a reply's reasoning never
		// opens a block inside the prefill's.
		{"echo with reasoning", text, domain.ChatRequest{IncludeReasoning: true, Echo: true, Messages: withPrefill("pre ")},
			"pre <think>\nthink\n</think>\n\none two three four five", "stop", 0},
		{"echo of open reasoning", text, domain.ChatRequest{IncludeReasoning: true, Echo: true, Messages: withPrefill("<think>\nLet me")},
			"<think>\nLet me think\n</think>\n\none two three four five", "stop", 0},
		{"echo and continue", text, domain.ChatRequest{IncludeReasoning: true, Echo: true, ContinueFinalMessage: true, Messages: withPrefill("<think>\nLet me")},
			"<think>\nLet me think\n</think>\n\none two three four five", "stop", 0},
		{"echo and continue plain", text, domain.ChatRequest{IncludeReasoning: true, Echo: true, ContinueFinalMessage: true, Messages: withPrefill("Well,")},
			"Well, one two three four five", "stop", 0},
		{"echo needs an assistant message last", text, domain.ChatRequest{Echo: true}, "one two three four five", "stop", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(Config{Engine: fakeEngine{tt.choice}, Counter: fakeCounter{}})
			if err != nil {
				t.Fatal(err)
			}
			req := tt.req
			req.Model, req.N = Model, 1
			if req.Messages == nil {
				req.Messages = []domain.Message{domain.TextMessage("user", "a question here")}
			}
			c, err := s.Complete(context.Background(), &req)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Choices[0]
			if got.Content != tt.content || got.FinishReason != tt.finish || len(got.ToolCalls) != tt.calls {
				t.Fatalf("got %+v", got)
			}
			if c.Usage.PromptTokens == 0 || c.Usage.Total() != c.Usage.PromptTokens+c.Usage.CompletionTokens {
				t.Fatalf("usage %+v", c.Usage)
			}
		})
	}
}

func withPrefill(text string) []domain.Message {
	return []domain.Message{domain.TextMessage("user", "a question here"), domain.TextMessage("assistant", text)}
}

func TestUnknownModel(t *testing.T) {
	t.Parallel()
	s, _ := New(Config{Engine: fakeEngine{}, Counter: fakeCounter{}})
	err := s.Check(&domain.ChatRequest{Model: "gpt-4o"})
	if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindNotFound || e.Code != "model_not_found" {
		t.Fatalf("%v", err)
	}
}

func TestPreTokenCounter(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "Hello, world!": 4, "don't": 3, "東京": 2, `{"a":1}`: 7} {
		if got := (PreTokenCounter{}).CountTokens(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

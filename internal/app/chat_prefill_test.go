package app_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/app"
)

const prefillSystem = `You are a retrieval agent. Tools:
- search: semantic search. Arguments: {"query": string, "limit": integer}.
- text_search: exact keyword search. Arguments: {"query": string, "limit": integer}.
- read: a document's full text. Arguments: {"id": string}.
- report_helpful_ids: report the ids that answer the question. Arguments: {"ids": [string]}.`

// thinkDepth returns the deepest nesting of <think> blocks in s and whether
// every block it opens is closed.
func thinkDepth(s string) (deepest int, closed bool) {
	depth := 0
	for {
		i, j := strings.Index(s, "<think>"), strings.Index(s, "</think>")
		switch {
		case i < 0 && j < 0:
			return deepest, depth == 0
		case j < 0 || (i >= 0 && i < j):
			depth++
			deepest = max(deepest, depth)
			s = s[i+len("<think>"):]
		default:
			depth--
			s = s[j+len("</think>"):]
		}
	}
}

// TestPrefillAndEchoOverHTTP checks continue_final_message and echo for the
// built-in engine through capsuled's HTTP API with the OpenAI Go SDK, without
// and with streaming: a continued reply goes on from the final assistant
// message and opens no reasoning block inside it (inside an open block, its
// reasoning goes on there and closes it); echo prepends that message and
// never nests blocks.
func TestPrefillAndEchoOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	base, admin := serveWithAdmin(t, app.Config{})
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(admin), option.WithMaxRetries(0))

	// reply returns the content and tool-call count of one turn, sent
	// plainly and streamed; both must agree.
	reply := func(t *testing.T, prefill string, opts ...option.RequestOption) (string, int) {
		t.Helper()
		params := openai.ChatCompletionNewParams{Model: "svc-1",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(prefillSystem),
				openai.UserMessage("Which city was the director of Ed Wood born in?"), openai.AssistantMessage(prefill)},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "dummy"})}}
		plain, err := client.Chat.Completions.New(ctx, params, opts...)
		if err != nil {
			t.Fatal(err)
		}
		stream := client.Chat.Completions.NewStreaming(ctx, params, opts...)
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		got, want := acc.Choices[0].Message, plain.Choices[0].Message
		if got.Content != want.Content || len(got.ToolCalls) != len(want.ToolCalls) {
			t.Fatalf("streamed %q (%d calls), plain %q (%d calls)", got.Content, len(got.ToolCalls), want.Content, len(want.ToolCalls))
		}
		return want.Content, len(want.ToolCalls)
	}
	cont := []option.RequestOption{option.WithJSONSet("continue_final_message", true), option.WithJSONSet("add_generation_prompt", false)}
	echo := option.WithJSONSet("echo", true)

	t.Run("continue inside open reasoning", func(t *testing.T) {
		prefill := "<think>\nThe question names a film; let me"
		content, calls := reply(t, prefill, cont...)
		if strings.Contains(content, "<think>") || strings.Count(content, "</think>") != 1 || calls == 0 {
			t.Fatalf("continuation %q (%d calls): want the reasoning to go on and close the prefill's block, with the tool calls", content, calls)
		}
		if deepest, closed := thinkDepth(prefill + content); deepest != 1 || !closed {
			t.Fatalf("prefill + continuation %q: blocks nest %d deep, closed %v", prefill+content, deepest, closed)
		}
	})
	t.Run("continue plain text", func(t *testing.T) {
		content, calls := reply(t, "I will search for", cont...)
		if strings.Contains(content, "<think>") || strings.Contains(content, "</think>") || calls == 0 {
			t.Fatalf("continuation %q (%d calls): want no reasoning block inside the continued text", content, calls)
		}
	})
	t.Run("echo of open reasoning", func(t *testing.T) {
		prefill := "<think>\nThe question names a film; let me"
		content, _ := reply(t, prefill, echo)
		if !strings.HasPrefix(content, prefill) {
			t.Fatalf("echo %q does not start with the last message", content)
		}
		if deepest, closed := thinkDepth(content); deepest != 1 || !closed {
			t.Fatalf("echo %q: blocks nest %d deep, closed %v", content, deepest, closed)
		}
	})
	t.Run("echo and continue", func(t *testing.T) {
		prefill := "<think>\nThe question names a film; let me"
		content, _ := reply(t, prefill, append(cont, echo)...)
		if !strings.HasPrefix(content, prefill) || strings.Count(content, "<think>") != 1 {
			t.Fatalf("echoed continuation %q: want the prefill then its continuation, one block", content)
		}
		if deepest, closed := thinkDepth(content); deepest != 1 || !closed {
			t.Fatalf("echo %q: blocks nest %d deep, closed %v", content, deepest, closed)
		}
	})
	t.Run("echo of plain text", func(t *testing.T) {
		content, _ := reply(t, "PREFIX ", echo)
		if !strings.HasPrefix(content, "PREFIX ") {
			t.Fatalf("echo %q does not start with the last message", content)
		}
		if deepest, closed := thinkDepth(content); deepest > 1 || !closed {
			t.Fatalf("echo %q: blocks nest %d deep, closed %v", content, deepest, closed)
		}
	})
}

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/app"
)

// The tests in this file run capsuled against a real model server: llama.cpp's
// llama-server with Gemma 3 270M on the CPU, which `bash .ci/llama.sh`
// compiles, fetches and starts (CI does). They are skipped when
// CAPSULED_TEST_LLAMA is not set. The model is small and weak: the tests
// check what the protocol guarantees (a reply, usage, tool calls that the
// server constrains to the tools' schema), not what it says.

func llamaURL(t *testing.T) (url, model string) {
	t.Helper()
	url = os.Getenv("CAPSULED_TEST_LLAMA")
	if url == "" {
		t.Skip("CAPSULED_TEST_LLAMA is not set: run `bash .ci/llama.sh` and source .cache/llama/env.sh to run the tests against a real model server")
	}
	model = os.Getenv("CAPSULED_TEST_LLAMA_MODEL")
	if model == "" {
		model = "gemma-3-270m"
	}
	return url, model
}

// llamaTimeout bounds one request to llama-server: a 270M model answers in
// seconds, but on two cores shared with a whole test run a memory chat
// prompt took over two minutes.
const llamaTimeout = 5 * time.Minute

func llamaChatConfig(url, model string) app.Config {
	return app.Config{Chat: app.ChatConfig{Engine: "upstream", UpstreamURL: url + "/v1", UpstreamModel: model, UpstreamTimeout: llamaTimeout}}
}

func llamaMemoryConfig(url, model string) app.MemoryConfig {
	return app.MemoryConfig{UpstreamURL: url + "/v1", UpstreamModels: model, UpstreamTimeout: llamaTimeout, Extract: false}
}

// svc-1 with the upstream engine answers through llama-server, at once and
// streamed, with the server's usage.
func TestLlamaSvc1Upstream(t *testing.T) {
	url, model := llamaURL(t)
	base, admin := serveWithAdmin(t, llamaChatConfig(url, model))
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(admin), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "svc-1", MaxTokens: openai.Int(24), Temperature: openai.Float(0), Seed: openai.Int(1),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Name the capital of France in one word.")}}

	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || strings.TrimSpace(c.Choices[0].Message.Content) == "" || c.Model != "svc-1" {
		t.Fatalf("reply %+v", c)
	}
	if c.Usage.PromptTokens <= 0 || c.Usage.CompletionTokens <= 0 || c.Usage.CompletionTokens > 24 {
		t.Fatalf("usage %+v, want the server's counts (completion ≤ max_tokens 24)", c.Usage)
	}
	t.Logf("svc-1 via llama-server: %q (%d+%d tokens)", c.Choices[0].Message.Content, c.Usage.PromptTokens, c.Usage.CompletionTokens)

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	var usage int64
	finish := ""
	for s.Next() {
		ch := s.Current()
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage.TotalTokens
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(text.String()) == "" || usage <= 0 || (finish != "stop" && finish != "length") {
		t.Fatalf("stream: text %q usage %d finish %q", text.String(), usage, finish)
	}
	// Same seed, temperature 0: the streamed reply is the same text.
	if text.String() != c.Choices[0].Message.Content {
		t.Logf("note: streamed %q, at once %q", text.String(), c.Choices[0].Message.Content)
	}
}

// With tool_choice "required" the server constrains the output to a tool
// call: even a 270M model makes a valid call, and capsuled returns it as a
// structured tool call, through svc-1's upstream engine and memory chat, at
// once and streamed. .ci/llama.sh gives llama-server a tool-aware chat
// template (llama.cpp's copy of Gemma 4's: the GGUF has none, and chatml
// knows no tools), whose grammar admits one call and nothing before it but an
// optional thought block when parallel_tool_calls is false; the arguments it admits are any object, not
// the tool's schema, so the test checks a JSON object.
func TestLlamaToolCallRequired(t *testing.T) {
	url, model := llamaURL(t)
	ctx := context.Background()
	base, admin := serveWithAdmin(t, app.Config{
		Chat:   llamaChatConfig(url, model).Chat,
		Memory: llamaMemoryConfig(url, model),
	})
	question := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Who directed the film Ed Wood?")}
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	for _, tc := range []struct {
		name   string
		client openai.Client
		params openai.ChatCompletionNewParams
	}{
		// svc-1's interface takes tools as name-only stubs (their
		// behaviour is in its system prompt).
		{"svc-1", openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(admin), option.WithMaxRetries(0)),
			openai.ChatCompletionNewParams{Model: "svc-1", Messages: question, ToolChoice: required,
				Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "search"})}}},
		// Memory chat forwards the client's tools.
		{"memory", openai.NewClient(option.WithBaseURL(base+"memory/"), option.WithAPIKey(admin), option.WithMaxRetries(0), option.WithQuery("namespace", "llama-tools")),
			openai.ChatCompletionNewParams{Model: model, Messages: question, ToolChoice: required,
				Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "search"})}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := tc.params
			params.MaxTokens, params.Temperature, params.ParallelToolCalls = openai.Int(64), openai.Float(0), openai.Bool(false)
			check := func(how, finish string, calls []openai.ChatCompletionMessageToolCallUnion) {
				t.Helper()
				if len(calls) != 1 || finish != "tool_calls" {
					t.Fatalf("%s: finish %q, calls %+v; want one tool call (a server that does not constrain tool_choice \"required\" was not started by .ci/llama.sh, which passes --chat-template-file)", how, finish, calls)
				}
				var m map[string]any
				if calls[0].Function.Name != "search" || json.Unmarshal([]byte(calls[0].Function.Arguments), &m) != nil || calls[0].ID == "" {
					t.Fatalf("%s: call %+v, want search with a JSON object and an id", how, calls[0])
				}
				t.Logf("%s: search(%s)", how, calls[0].Function.Arguments)
			}
			c, err := tc.client.Chat.Completions.New(ctx, params)
			if err != nil {
				var apiErr *openai.Error
				if errors.As(err, &apiErr) {
					t.Fatalf("%v: %s", err, apiErr.RawJSON())
				}
				t.Fatal(err)
			}
			if len(c.Choices) != 1 {
				t.Fatalf("reply %+v", c.Choices)
			}
			check("at once", c.Choices[0].FinishReason, c.Choices[0].Message.ToolCalls)

			s := tc.client.Chat.Completions.NewStreaming(ctx, params)
			acc := openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("stream: %+v", acc.Choices)
			}
			check("streamed", acc.Choices[0].FinishReason, acc.Choices[0].Message.ToolCalls)
		})
	}
}

// Memory chat answers through llama-server and remembers the turn.
func TestLlamaMemoryChat(t *testing.T) {
	url, model := llamaURL(t)
	base, admin := serveWithAdmin(t, app.Config{Memory: llamaMemoryConfig(url, model)})
	client := openai.NewClient(option.WithBaseURL(base+"memory/"), option.WithAPIKey(admin), option.WithMaxRetries(0),
		option.WithQuery("namespace", "llama"))
	ctx := context.Background()
	turn := func(text string) *openai.ChatCompletion {
		t.Helper()
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(24), Temperature: openai.Float(0),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) != 1 || strings.TrimSpace(c.Choices[0].Message.Content) == "" || c.Usage.CompletionTokens <= 0 {
			t.Fatalf("reply %+v", c)
		}
		return c
	}
	first := turn("My sister Ana keeps bees in Porto.")
	if raw := first.JSON.ExtraFields["memory"].Raw(); !strings.Contains(raw, "mem_") {
		t.Fatalf("first turn wrote nothing: %s", raw)
	}
	second := turn("Where does my sister keep bees?")
	if raw := second.JSON.ExtraFields["memory"].Raw(); !strings.Contains(raw, `"read"`) || !strings.Contains(raw, "mem_") {
		t.Fatalf("second turn read nothing: %s", raw)
	}
	t.Logf("memory chat via llama-server: %q", second.Choices[0].Message.Content)
}

package conformance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/conformance"
)

const chatSystem = `You are a retrieval agent. Tools:
- search: semantic search. Arguments: {"query": string, "limit": integer}.
- text_search: exact keyword search. Arguments: {"query": string, "limit": integer}.
- read: a document's full text. Arguments: {"id": string}.
- report_helpful_ids: report the ids that answer the question. Arguments: {"ids": [string]}.`

var (
	chatKeyOnce sync.Once
	chatKey     string
)

// chatCred is a key with the chat scope, shared by the chat tests.
func chatCred(t *testing.T) string {
	t.Helper()
	chatKeyOnce.Do(func() { _, chatKey = newKey(t, map[string]any{"name": "chat-tests", "scopes": []string{"chat"}}) })
	return chatKey
}

func chatBody(extra map[string]any) map[string]any {
	b := map[string]any{
		"model": "svc-1",
		"messages": []any{
			map[string]any{"role": "system", "content": chatSystem},
			map[string]any{"role": "user", "content": `Who directed the film "Ed Wood" and where was he born?`},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "dummy"}}},
	}
	for k, v := range extra {
		if v == nil {
			delete(b, k)
			continue
		}
		b[k] = v
	}
	return b
}

type chatReply struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func postChat(t *testing.T, body any) response {
	t.Helper()
	return do(t, req{method: "POST", path: "/v1/chat/completions", cred: chatCred(t), body: body})
}

func TestChatFirstTurn(t *testing.T) {
	var r chatReply
	expect(t, postChat(t, chatBody(nil)), http.StatusOK).JSON(t, &r)
	if r.Object != "chat.completion" || r.Model != "svc-1" || len(r.Choices) != 1 {
		t.Fatalf("reply %+v", r)
	}
	c := r.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) < 2 || !strings.HasPrefix(c.Message.Content, "<think>") {
		t.Fatalf("choice %+v", c)
	}
	names := map[string]bool{}
	for _, tc := range c.Message.ToolCalls {
		names[tc.Function.Name] = true
		var args struct {
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || args.Query == "" || args.Limit <= 0 || tc.Type != "function" || tc.ID == "" {
			t.Fatalf("tool call %+v", tc)
		}
	}
	if !names["search"] || !names["text_search"] {
		t.Fatalf("want parallel search and text_search, got %v", names)
	}
	if r.Usage.PromptTokens == 0 || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
		t.Fatalf("usage %+v", r.Usage)
	}
}

func TestChatRequestErrors(t *testing.T) {
	stub := map[string]any{"type": "function", "function": map[string]any{"name": "dummy"}}
	tests := []struct {
		name   string
		extra  map[string]any
		status int
		code   string
		param  string
	}{
		{"unknown model", map[string]any{"model": "gpt-4o"}, 404, "model_not_found", "model"},
		{"two tools of one name", map[string]any{"tools": []any{stub, stub}}, 400, "invalid_tool_stub", "tools[1].function.name"},
		{"continue with generation prompt", map[string]any{"continue_final_message": true}, 400, "invalid_value", "continue_final_message"},
		{"tool_choice without stub", map[string]any{"tools": nil, "tool_choice": "required"}, 400, "invalid_value", "tool_choice"},
		{"max_tokens disagrees", map[string]any{"max_tokens": 5, "max_completion_tokens": 6}, 400, "invalid_value", "max_tokens"},
		{"logprobs", map[string]any{"logprobs": true}, 400, "unsupported_parameter", "logprobs"},
		{"top_logprobs", map[string]any{"top_logprobs": 3}, 400, "unsupported_parameter", "top_logprobs"},
		{"structured_outputs", map[string]any{"structured_outputs": map[string]any{"regex": "a+"}}, 400, "unsupported_parameter", "structured_outputs"},
		{"response_format json", map[string]any{"response_format": map[string]any{"type": "json_object"}}, 400, "unsupported_parameter", "response_format"},
		{"beam search", map[string]any{"use_beam_search": true}, 400, "unsupported_parameter", "use_beam_search"},
		{"unsupported while streaming", map[string]any{"logprobs": true, "stream": true}, 400, "unsupported_parameter", "logprobs"},
		{"bad n", map[string]any{"n": 0}, 400, "invalid_value", "n"},
		{"no messages", map[string]any{"messages": []any{}}, 400, "invalid_value", "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := expect(t, postChat(t, chatBody(tt.extra)), tt.status)
			e := resp.Err(t)
			if e.Error.Code == nil || *e.Error.Code != tt.code || e.Error.Param == nil || *e.Error.Param != tt.param {
				t.Fatalf("error %s, want code %s param %s", resp.Body, tt.code, tt.param)
			}
			if tt.code == "unsupported_parameter" && !strings.Contains(e.Error.Message, "builtin") {
				t.Fatalf("message does not name the engine: %s", e.Error.Message)
			}
		})
	}
	t.Run("accepted defaults", func(t *testing.T) {
		expect(t, postChat(t, chatBody(map[string]any{"logprobs": false, "top_logprobs": 0, "response_format": map[string]any{"type": "text"},
			"seed": 7, "temperature": 0.2, "top_p": 0.9, "user": "u", "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.1, "length_penalty": 1,
			"stop_token_ids": []int{}, "ignore_eos": false, "min_tokens": 0, "skip_special_tokens": true, "bad_words": []string{}, "reasoning_effort": "low",
			"add_generation_prompt": true, "add_special_tokens": false, "chat_template_kwargs": map[string]any{"x": 1}, "truncate_prompt_tokens": 100,
			"spaces_between_special_tokens": true, "include_stop_str_in_output": false, "frequency_penalty": 0, "presence_penalty": 0})), http.StatusOK)
	})
	t.Run("unauthenticated", func(t *testing.T) {
		expect(t, do(t, req{method: "POST", path: "/v1/chat/completions", body: chatBody(nil)}), http.StatusUnauthorized)
	})
	t.Run("wrong scope", func(t *testing.T) {
		_, key := newKey(t, map[string]any{"scopes": []string{"memory"}})
		expect(t, do(t, req{method: "POST", path: "/v1/chat/completions", cred: key, body: chatBody(nil)}), http.StatusForbidden)
	})
}

func TestChatParameters(t *testing.T) {
	first := func(t *testing.T, extra map[string]any) chatReply {
		t.Helper()
		var r chatReply
		expect(t, postChat(t, chatBody(extra)), http.StatusOK).JSON(t, &r)
		return r
	}
	t.Run("include_reasoning false", func(t *testing.T) {
		r := first(t, map[string]any{"include_reasoning": false})
		if strings.Contains(r.Choices[0].Message.Content, "<think>") || len(r.Choices[0].Message.ToolCalls) == 0 {
			t.Fatalf("%+v", r.Choices[0])
		}
	})
	t.Run("n", func(t *testing.T) {
		r := first(t, map[string]any{"n": 3})
		if len(r.Choices) != 3 || r.Choices[2].Index != 2 || !reflect.DeepEqual(r.Choices[0].Message, r.Choices[2].Message) {
			t.Fatalf("%+v", r.Choices)
		}
	})
	t.Run("stop", func(t *testing.T) {
		r := first(t, map[string]any{"stop": []string{"search"}})
		c := r.Choices[0]
		if c.FinishReason != "stop" || strings.Contains(c.Message.Content, "search") || len(c.Message.ToolCalls) != 0 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("max_completion_tokens", func(t *testing.T) {
		r := first(t, map[string]any{"max_completion_tokens": 3})
		if c := r.Choices[0]; c.FinishReason != "length" || len(c.Message.ToolCalls) != 0 || r.Usage.CompletionTokens > 3 {
			t.Fatalf("%+v usage %+v", c, r.Usage)
		}
	})
	t.Run("deprecated max_tokens", func(t *testing.T) {
		if r := first(t, map[string]any{"max_tokens": 2}); r.Choices[0].FinishReason != "length" {
			t.Fatalf("%+v", r.Choices[0])
		}
	})
	t.Run("tool_choice none", func(t *testing.T) {
		r := first(t, map[string]any{"tool_choice": "none"})
		if c := r.Choices[0]; c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("no stub means no tool calls", func(t *testing.T) {
		if c := first(t, map[string]any{"tools": nil}).Choices[0]; len(c.Message.ToolCalls) != 0 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("named tool_choice", func(t *testing.T) {
		r := first(t, map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "report_helpful_ids"}}})
		c := r.Choices[0]
		if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "report_helpful_ids" {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("parallel_tool_calls false", func(t *testing.T) {
		if c := first(t, map[string]any{"parallel_tool_calls": false}).Choices[0]; len(c.Message.ToolCalls) != 1 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("echo", func(t *testing.T) {
		body := chatBody(map[string]any{"echo": true, "tool_choice": "none"})
		body["messages"] = append(body["messages"].([]any), map[string]any{"role": "assistant", "content": "PREFIX "})
		var r chatReply
		expect(t, postChat(t, body), http.StatusOK).JSON(t, &r)
		if !strings.HasPrefix(r.Choices[0].Message.Content, "PREFIX ") {
			t.Fatalf("%q", r.Choices[0].Message.Content)
		}
	})
	t.Run("continue_final_message", func(t *testing.T) {
		body := chatBody(map[string]any{"continue_final_message": true, "add_generation_prompt": false})
		body["messages"] = append(body["messages"].([]any), map[string]any{"role": "assistant", "content": "Let me"})
		expect(t, postChat(t, body), http.StatusOK)
	})
	t.Run("deterministic with and without seed", func(t *testing.T) {
		a, b := first(t, nil), first(t, map[string]any{"seed": 42})
		if !reflect.DeepEqual(a.Choices, b.Choices) {
			t.Fatalf("%+v\n%+v", a.Choices, b.Choices)
		}
	})
	t.Run("custom role and content parts", func(t *testing.T) {
		body := chatBody(nil)
		body["messages"] = append([]any{map[string]any{"role": "narrator", "content": []any{map[string]any{"type": "thinking", "thinking": "hm", "closed": true}}}},
			map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": chatSystem}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "What is BM25?"}}})
		expect(t, postChat(t, body), http.StatusOK)
	})
}

// streamed accumulates a raw SSE reply into the message it carries.
type streamed struct {
	content   string
	toolCalls map[int]*[3]string // id, name, arguments
	finish    string
	usage     map[string]any
	errEvent  bool
	roles     int
}

func accumulate(t *testing.T, body []byte) streamed {
	t.Helper()
	events, err := conformance.ParseEventStream(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("stream: %v\n%s", err, body)
	}
	s := streamed{toolCalls: map[int]*[3]string{}}
	for _, e := range events {
		var ch struct {
			Object  string `json:"object"`
			Error   any    `json:"error"`
			Choices []struct {
				Delta struct {
					Role      string  `json:"role"`
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &ch); err != nil {
			t.Fatal(err)
		}
		if ch.Error != nil {
			s.errEvent = true
			continue
		}
		if ch.Usage != nil {
			s.usage = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Delta.Role != "" {
				s.roles++
			}
			if c.Delta.Content != nil {
				s.content += *c.Delta.Content
			}
			for _, tc := range c.Delta.ToolCalls {
				acc := s.toolCalls[tc.Index]
				if acc == nil {
					acc = &[3]string{}
					s.toolCalls[tc.Index] = acc
				}
				acc[0] += tc.ID
				acc[1] += tc.Function.Name
				acc[2] += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				s.finish = *c.FinishReason
			}
		}
	}
	return s
}

func TestChatStreamingMatchesNonStreaming(t *testing.T) {
	for _, extra := range []map[string]any{
		nil,
		{"include_reasoning": false},
		{"tool_choice": "none"},
		{"max_completion_tokens": 4},
	} {
		var plain chatReply
		expect(t, postChat(t, chatBody(extra)), http.StatusOK).JSON(t, &plain)
		se := map[string]any{"stream": true}
		for k, v := range extra {
			se[k] = v
		}
		resp := expect(t, postChat(t, chatBody(se)), http.StatusOK)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content type %q", ct)
		}
		s := accumulate(t, resp.Body)
		c := plain.Choices[0]
		if s.content != c.Message.Content || s.finish != c.FinishReason || len(s.toolCalls) != len(c.Message.ToolCalls) || s.roles != 1 {
			t.Fatalf("%v: streamed %+v\nplain %+v", extra, s, c)
		}
		for i, tc := range c.Message.ToolCalls {
			got := s.toolCalls[i]
			if got == nil || got[0] != tc.ID || got[1] != tc.Function.Name || got[2] != tc.Function.Arguments {
				t.Fatalf("tool call %d: %v vs %+v", i, got, tc)
			}
		}
		if s.usage == nil || int(s.usage["total_tokens"].(float64)) != plain.Usage.TotalTokens {
			t.Fatalf("usage %v vs %+v", s.usage, plain.Usage)
		}
	}
	t.Run("no usage chunk when not asked", func(t *testing.T) {
		resp := expect(t, postChat(t, chatBody(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": false}})), http.StatusOK)
		if s := accumulate(t, resp.Body); s.usage != nil {
			t.Fatalf("usage %v", s.usage)
		}
	})
	t.Run("continuous usage", func(t *testing.T) {
		resp := expect(t, postChat(t, chatBody(map[string]any{"stream": true, "n": 2, "stream_options": map[string]any{"continuous_usage_stats": true}})), http.StatusOK)
		events, _ := conformance.ParseEventStream(strings.NewReader(string(resp.Body)))
		for _, e := range events {
			if !strings.Contains(e, `"usage":{`) {
				t.Fatalf("chunk without usage: %s", e)
			}
		}
		if s := accumulate(t, resp.Body); s.roles != 2 {
			t.Fatalf("roles %d", s.roles)
		}
	})
}

func sdkClient(t *testing.T) openai.Client {
	return openai.NewClient(option.WithBaseURL(srv.url+"/v1/"), option.WithAPIKey(chatCred(t)),
		option.WithHTTPClient(recorder.Client()), option.WithMaxRetries(0))
}

func sdkParams(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "svc-1",
		Messages: append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage(chatSystem)}, msgs...),
		Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "dummy"})},
	}
}

// sdkCorpus is a tiny search backend for the SDK loop test.
var sdkCorpus = []map[string]string{
	{"id": "d1", "title": "Ed Wood (film)", "content": "Ed Wood is a 1994 American biographical film directed by Tim Burton."},
	{"id": "d2", "title": "Tim Burton", "content": "Timothy Walter Burton (born August 25, 1958) is an American filmmaker born in Burbank, California."},
	{"id": "d3", "title": "Burbank", "content": "Burbank is a city in Los Angeles County, California."},
	{"id": "d4", "title": "Glen or Glenda", "content": "Glen or Glenda is a 1953 film by Ed Wood."},
}

func sdkSearch(q string) string {
	var out []map[string]string
	ql := strings.ToLower(q)
	for _, d := range sdkCorpus {
		for _, w := range strings.Fields(strings.ToLower(d["title"] + " " + d["content"])) {
			if len(w) > 3 && strings.Contains(ql, strings.Trim(w, ".,()")) {
				out = append(out, d)
				break
			}
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func TestChatSDKLoop(t *testing.T) {
	client := sdkClient(t)
	ctx := context.Background()
	params := sdkParams(openai.UserMessage("Who directed the film Ed Wood, and where was he born?"))
	var reported []string
	for turn := 0; turn < 8 && reported == nil; turn++ {
		comp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg := comp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			t.Fatalf("turn %d: no tool calls: %+v", turn, msg)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			fn := tc.Function
			result := `{"ok":true}`
			switch fn.Name {
			case "search", "text_search":
				var a struct{ Query string }
				_ = json.Unmarshal([]byte(fn.Arguments), &a)
				result = sdkSearch(a.Query)
			case "read":
				result = "d2: " + sdkCorpus[1]["content"]
			case "report_helpful_ids":
				var a struct{ IDs []string }
				if err := json.Unmarshal([]byte(fn.Arguments), &a); err != nil {
					t.Fatal(err)
				}
				reported = append([]string{}, a.IDs...)
			}
			params.Messages = append(params.Messages, openai.ToolMessage(result, tc.ID))
		}
	}
	if len(reported) < 2 || !contains(reported[:3], "d1") || !contains(reported[:3], "d2") {
		t.Fatalf("reported %v", reported)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestChatSDKStreaming(t *testing.T) {
	client := sdkClient(t)
	ctx := context.Background()
	params := sdkParams(openai.UserMessage(`Which magazine was started first, "Arthur's Magazine" or "First for Women"?`))
	plain, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	got, want := acc.Choices[0].Message, plain.Choices[0].Message
	if got.Content != want.Content || len(got.ToolCalls) != len(want.ToolCalls) || acc.Choices[0].FinishReason != plain.Choices[0].FinishReason {
		t.Fatalf("streamed %+v\nplain %+v", got, want)
	}
	for i := range want.ToolCalls {
		if got.ToolCalls[i].ID != want.ToolCalls[i].ID || got.ToolCalls[i].Function.Name != want.ToolCalls[i].Function.Name || got.ToolCalls[i].Function.Arguments != want.ToolCalls[i].Function.Arguments {
			t.Fatalf("tool call %d: %+v vs %+v", i, got.ToolCalls[i], want.ToolCalls[i])
		}
	}
	if acc.Usage.TotalTokens != plain.Usage.TotalTokens {
		t.Fatalf("usage %+v vs %+v", acc.Usage, plain.Usage)
	}

	// errors come back as the SDK's API errors
	params.Model = "gpt-4o"
	_, err = client.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("err %v", err)
	}
}

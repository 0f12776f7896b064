package app_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/app"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

// TestTokensPerMinuteThroughTheServer runs capsuled with --rate-limit-tpm 20
// and drives it with the OpenAI Go SDK: a completion is admitted, its prompt
// and completion tokens are charged to its key after it ran (streamed or
// not, svc-1 chat or memory chat), and the key's next request gets 429 with
// Retry-After, while another key is still admitted.
func TestTokensPerMinuteThroughTheServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, url := startApp(t, app.Config{RateLimitTPM: 20})
	base := url + "/v1/"

	newKey := func(name string) string {
		t.Helper()
		_, secret, err := a.Auth().CreateKey(ctx, auth.NewKey{Name: name, Scopes: []domain.Scope{domain.ScopeChat, domain.ScopeMemory}})
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	// A prompt well over the budget of 20 tokens a minute.
	long := "Which retrieval settings give the best recall on scientific claims, and how should a capsule be built from papers, notes and chat logs so that svc-1 finds the evidence for each claim quickly?"
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(long)}
	// limited checks a refusal of a key that used `used` tokens of its 20 a
	// minute: the debt, used-20, is paid back at 20 a minute, so Retry-After
	// is (used-20)*3 seconds (less the time the test took since).
	limited := func(t *testing.T, err error, used int64) {
		t.Helper()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("next request: %v, want 429", err)
		}
		secs, perr := strconv.Atoi(apiErr.Response.Header.Get("Retry-After"))
		if want := int((used - 20) * 3); perr != nil || secs > want || secs < want-10 {
			t.Fatalf("Retry-After %q, want about %d s (the debt of %d tokens at 20 a minute)", apiErr.Response.Header.Get("Retry-After"), want, used-20)
		}
		if apiErr.Type != "rate_limit_error" {
			t.Fatalf("error type %q", apiErr.Type)
		}
	}

	for _, tc := range []struct {
		name   string
		path   string // under /v1/
		model  string
		stream bool
	}{
		{"chat", "", "svc-1", false},
		{"chat stream", "", "svc-1", true},
		{"memory", "memory/", memory.ExtractiveModel, false},
		{"memory stream", "memory/", memory.ExtractiveModel, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := openai.NewClient(option.WithBaseURL(base+tc.path), option.WithAPIKey(newKey(tc.name)), option.WithMaxRetries(0))
			params := openai.ChatCompletionNewParams{Model: tc.model, Messages: msgs}
			var used int64
			if tc.stream {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				s := client.Chat.Completions.NewStreaming(ctx, params)
				for s.Next() {
					if u := s.Current().Usage; u.TotalTokens > 0 {
						used = u.TotalTokens
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				c, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				used = c.Usage.TotalTokens
			}
			if used <= 20 {
				t.Fatalf("the turn used %d tokens; the test needs more than the budget of 20", used)
			}
			// The tokens were charged: the key is in debt.
			_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: tc.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			limited(t, err, used)
			s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: tc.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			for s.Next() {
			}
			limited(t, s.Err(), used)
			// Another key has its own budget.
			other := openai.NewClient(option.WithBaseURL(base+tc.path), option.WithAPIKey(newKey(tc.name+" other")), option.WithMaxRetries(0))
			if _, err := other.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: tc.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
				t.Fatalf("another key: %v", err)
			}
		})
	}
}

// fakeMemoryUpstream is a fake OpenAI-compatible server for the unit test
// of memory chat's token charging: it answers a chat turn with a short
// reply (3+2 tokens) and a fact extraction (the request that asks for a
// JSON object) with one fact (150+30 tokens), and counts the extractions.
func fakeMemoryUpstream(t *testing.T) (url string, extractions *atomic.Int32) {
	t.Helper()
	extractions = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ResponseFormat *struct {
				Type string `json:"type"`
			} `json:"response_format"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		content, prompt, completion := "Noted.", 3, 2
		if body.ResponseFormat != nil && body.ResponseFormat.Type == "json_object" {
			extractions.Add(1)
			content, prompt, completion = `{"facts": [{"fact": "Ana keeps bees in Porto.", "supersedes": []}]}`, 150, 30
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", extractions
}

// TestTokensPerMinuteChargesMemoryExtraction runs memory chat with fact
// extraction against a fake upstream (fakeMemoryUpstream) and
// --rate-limit-tpm 100: the reply itself uses 5 tokens, the extraction
// 180, and both are charged to the key, so its next request gets 429 with
// the Retry-After of a debt of 85 tokens — streamed or not. Without
// extraction the same turn leaves the key within its budget.
func TestTokensPerMinuteChargesMemoryExtraction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		extract bool
		stream  bool
	}{{"extraction", true, false}, {"extraction stream", true, true}, {"no extraction", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, extractions := fakeMemoryUpstream(t)
			ctx := t.Context()
			a, url := startApp(t, app.Config{RateLimitTPM: 100,
				Memory: app.MemoryConfig{UpstreamURL: up, UpstreamModels: "fake-model", Extract: tc.extract}})
			_, key, err := a.Auth().CreateKey(ctx, auth.NewKey{Name: tc.name, Scopes: []domain.Scope{domain.ScopeMemory}})
			if err != nil {
				t.Fatal(err)
			}
			client := openai.NewClient(option.WithBaseURL(url+"/v1/memory/"), option.WithAPIKey(key), option.WithMaxRetries(0))
			params := openai.ChatCompletionNewParams{Model: "fake-model",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("My sister Ana keeps bees in Porto.")}}
			var used int64
			if tc.stream {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				s := client.Chat.Completions.NewStreaming(ctx, params)
				for s.Next() {
					if u := s.Current().Usage; u.TotalTokens > 0 {
						used = u.TotalTokens
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				c, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				used = c.Usage.TotalTokens
				want := `"extraction":"none"`
				if tc.extract {
					want = `"extraction":"ok"`
				}
				if raw := c.JSON.ExtraFields["memory"].Raw(); !strings.Contains(raw, want) {
					t.Fatalf("memory report %s, want %s", raw, want)
				}
			}
			// The reply's usage is the reply's: the extraction's tokens are
			// charged, not reported as the reply's.
			if used != 5 {
				t.Fatalf("reply usage %d tokens, want the fake's 5", used)
			}
			if n := extractions.Load(); (n == 1) != tc.extract {
				t.Fatalf("%d extraction requests", n)
			}
			_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "fake-model",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			if !tc.extract {
				if err != nil {
					t.Fatalf("without extraction the key used 5 of its 100 tokens, yet: %v", err)
				}
				return
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Type != "rate_limit_error" {
				t.Fatalf("next request: %v, want 429 rate_limit_error (5 + 180 tokens charged of 100 a minute)", err)
			}
			// A debt of 85 tokens at 100 a minute: 51 s.
			if secs, perr := strconv.Atoi(apiErr.Response.Header.Get("Retry-After")); perr != nil || secs > 52 || secs < 41 {
				t.Fatalf("Retry-After %q, want about 51 s (a debt of 85 tokens at 100 a minute)", apiErr.Response.Header.Get("Retry-After"))
			}
		})
	}
}

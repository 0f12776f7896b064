package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
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
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Config{DataDir: t.TempDir(), RateLimitTPM: 20}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done; a.Close() })
	base := "http://" + l.Addr().String() + "/v1/"

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

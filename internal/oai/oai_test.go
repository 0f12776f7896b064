package oai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
)

// The failure table, once for every kind of call the client makes: each
// case is a fake server (httptest; a fake of an OpenAI-compatible server,
// for the unit test of the client around it) behaving one way, and the error
// every call gets from it.
func TestFailureTable(t *testing.T) {
	t.Parallel()
	type want struct {
		kind  domain.Kind
		code  string
		retry int
		text  string // in the message
	}
	status := func(code int, header map[string]string, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    want
	}{
		{"429 with Retry-After", status(429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"slow down"}}`), want{domain.KindRateLimited, "upstream_rate_limited", 7, "slow down"}},
		{"429 without Retry-After", status(429, nil, `{"error":"busy"}`), want{domain.KindRateLimited, "upstream_rate_limited", 5, "busy"}},
		{"400", status(400, nil, `{"object":"error","message":"max_tokens is too large","type":"BadRequestError"}`), want{domain.KindInvalid, "upstream_rejected", 0, "max_tokens is too large"}},
		{"422", status(422, nil, `{"detail":"field required"}`), want{domain.KindInvalid, "upstream_rejected", 0, "field required"}},
		{"413", status(413, nil, `too big`), want{domain.KindInvalid, "upstream_rejected", 0, "too big"}},
		{"401", status(401, nil, `{"error":{"message":"bad key"}}`), want{domain.KindUpstream, "upstream_auth", 0, "check the configured key"}},
		{"403", status(403, nil, ``), want{domain.KindUpstream, "upstream_auth", 0, "(403)"}},
		{"404 model", status(404, nil, `{"error":{"message":"The model x does not exist."}}`), want{domain.KindUpstream, "upstream_not_found", 0, "does not exist"}},
		{"408", status(408, nil, ``), want{domain.KindTimeout, "upstream_timeout", 0, "timed out"}},
		{"504", status(504, nil, ``), want{domain.KindTimeout, "upstream_timeout", 0, "timed out"}},
		{"503", status(503, map[string]string{"Retry-After": "11"}, `loading`), want{domain.KindUnavailable, "upstream_unavailable", 11, "loading"}},
		{"502", status(502, nil, `bad gateway`), want{domain.KindUnavailable, "upstream_unavailable", 5, "bad gateway"}},
		{"500", status(500, nil, `{"error":{"message":"CUDA out of memory"}}`), want{domain.KindUpstream, "upstream_error", 0, "CUDA out of memory"}},
		{"not JSON", status(200, map[string]string{"Content-Type": "application/json"}, `<html>proxy</html>`), want{domain.KindUpstream, "upstream_bad_reply", 0, "does not follow the protocol"}},
		{"time-out", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, want{domain.KindTimeout, "upstream_timeout", 0, "did not answer in time"}},
		{"reset", func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}, want{domain.KindUpstream, "upstream_error", 0, "reset the connection"}},
	}
	for _, call := range calls {
		for _, tc := range cases {
			t.Run(call.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := httptest.NewServer(tc.handler)
				defer srv.Close()
				c, err := New(Config{URL: srv.URL + "/v1", Timeout: 300 * time.Millisecond, Name: "the test server"})
				if err != nil {
					t.Fatal(err)
				}
				err = call.do(context.Background(), c)
				de, ok := domain.AsError(err)
				if !ok {
					t.Fatalf("error %v (%T), want a domain error", err, err)
				}
				if de.Kind != tc.want.kind || de.Code != tc.want.code || de.RetryAfter != tc.want.retry {
					t.Fatalf("got kind %s code %s retry %d, want %s %s %d (%v)", de.Kind, de.Code, de.RetryAfter, tc.want.kind, tc.want.code, tc.want.retry, err)
				}
				if !strings.Contains(de.Message, tc.want.text) || !strings.Contains(de.Message, "the test server") {
					t.Fatalf("message %q lacks %q or the server's name", de.Message, tc.want.text)
				}
			})
		}
	}
}

// calls are the client's calls, each run against every failure.
var calls = []struct {
	name string
	do   func(context.Context, *Client) error
}{
	{"chat", func(ctx context.Context, c *Client) error {
		_, err := c.Chat(ctx, map[string]any{"model": "m"}, false)
		return err
	}},
	{"chat stream", func(ctx context.Context, c *Client) error {
		_, err := c.Chat(ctx, map[string]any{"model": "m", "stream": true}, true)
		return err
	}},
	{"embeddings", func(ctx context.Context, c *Client) error {
		_, err := c.Embeddings(ctx, "m", []string{"a"})
		return err
	}},
	{"rerank", func(ctx context.Context, c *Client) error {
		_, err := c.Rerank(ctx, "m", "q", []string{"a"})
		return err
	}},
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := New(Config{URL: "http://" + addr + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range calls {
		de, ok := domain.AsError(call.do(context.Background(), c))
		if !ok || de.Kind != domain.KindUnavailable || de.Code != "upstream_unavailable" || de.RetryAfter != 5 {
			t.Fatalf("%s: %+v, want unavailable with Retry-After 5", call.name, de)
		}
	}
}

func TestCallerCancelIsNotAnUpstreamFailure(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, len(calls))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a closed connection once the body is read
		started <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		if err := call.do(ctx, c); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", call.name, err)
		}
	}
}

// sse serves events as a text/event-stream, optionally without [DONE].
func sse(events []string, done bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		if done {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}
}

func TestStreamFailures(t *testing.T) {
	t.Parallel()
	chunk := `{"id":"c1","choices":[{"index":0,"delta":{"content":"hel"}}]}`
	for _, tc := range []struct {
		name       string
		handler    http.HandlerFunc
		kind       domain.Kind
		code, text string
	}{
		{"truncated", sse([]string{chunk}, false), domain.KindUpstream, "upstream_truncated", "before [DONE]"},
		{"error event", sse([]string{chunk, `{"error":{"message":"the engine died","code":500}}`}, true), domain.KindUpstream, "upstream_error", "the engine died"},
		{"garbled event", sse([]string{chunk, `{"choices":[`}, true), domain.KindUpstream, "upstream_bad_reply", "protocol"},
		{"no choices", sse([]string{`{"id":"c1","choices":[]}`}, true), domain.KindUpstream, "upstream_bad_reply", "protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c, _ := New(Config{URL: srv.URL})
			_, err := c.Chat(context.Background(), map[string]any{}, true)
			de, ok := domain.AsError(err)
			if !ok || de.Kind != tc.kind || de.Code != tc.code || !strings.Contains(de.Message, tc.text) {
				t.Fatalf("%v, want %s %s %q", err, tc.kind, tc.code, tc.text)
			}
		})
	}
}

func TestChatAccumulatesAStream(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sse([]string{
		`{"id":"c1","created":5,"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"think "}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"more","content":"Hel"}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"content":"lo","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"sea","arguments":"{\"q\""}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"rch","arguments":":1}"}},{"index":1,"function":{"name":"read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
	}, true))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL})
	got, err := c.Chat(context.Background(), map[string]any{}, true)
	if err != nil {
		t.Fatal(err)
	}
	m := got.Choices[0].Message
	if got.ID != "c1" || got.Created != 5 || m.Text() != "Hello" || m.ReasoningText() != "think more" || got.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("%+v", got)
	}
	if len(m.ToolCalls) != 2 || m.ToolCalls[0].Function.Name != "search" || m.ToolCalls[0].Function.Arguments != `{"q":1}` || m.ToolCalls[0].ID != "call_1" || m.ToolCalls[1].Function.Name != "read" {
		t.Fatalf("tool calls %+v", m.ToolCalls)
	}
	if got.Usage == nil || got.Usage.PromptTokens != 3 || got.Usage.CompletionTokens != 4 {
		t.Fatalf("usage %+v", got.Usage)
	}
}

// A server that ignores "stream" and answers one JSON object still works.
func TestStreamAnsweredWithJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"message":{"content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL})
	got, err := c.Chat(context.Background(), map[string]any{}, true)
	if err != nil || got.Choices[0].Message.Text() != "whole" || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestRerankRejectsBadIndexes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"results":[{"index":0,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}`)
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL})
	_, err := c.Rerank(context.Background(), "m", "q", []string{"a", "b"})
	if de, ok := domain.AsError(err); !ok || de.Code != "upstream_bad_reply" {
		t.Fatalf("%v, want upstream_bad_reply", err)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:8000", "ftp://x/v1", "http://"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"capsuled/internal/domain"
)

// fakeUpstream serves one fixture from testdata and records the request body.
func fakeUpstream(t *testing.T, fixture string, got *map[string]any) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile("testdata/" + fixture)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer up-key" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusUnauthorized)
			return
		}
		if got != nil {
			_ = json.NewDecoder(r.Body).Decode(got)
		}
		if len(fixture) > 4 && fixture[len(fixture)-4:] == ".sse" {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newEngine(t *testing.T, url string, timeout time.Duration) *Engine {
	t.Helper()
	e, err := New(Config{URL: url + "/v1", Model: "qwen", Key: "up-key", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func request(stream bool) *domain.ChatRequest {
	return &domain.ChatRequest{Model: "svc-1", Stream: stream, Echo: true, Messages: []domain.Message{domain.TextMessage("user", "q")},
		Passthrough: map[string]any{"logprobs": true, "top_k": json.Number("20"), "continue_final_message": false, "add_generation_prompt": true}}
}

func TestGenerateFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture   string
		stream    bool
		reasoning string
		content   string
		calls     []domain.ToolCall
		usage     *domain.Usage
	}{
		{"structured.json", false, "Search both films.", "", []domain.ToolCall{
			{ID: "chatcmpl-tool-a1", Type: "function", Name: "search", Arguments: `{"limit":10,"query":"Ed Wood film"}`},
			{ID: "chatcmpl-tool-a2", Type: "function", Name: "text_search", Arguments: `{"limit":5,"query":"Scott Derrickson"}`},
		}, &domain.Usage{PromptTokens: 321, CompletionTokens: 39}},
		{"hermes.json", false, "I should read d1.", "", []domain.ToolCall{
			{ID: "call_", Type: "function", Name: "read", Arguments: `{"id":"d1"}`},
		}, &domain.Usage{PromptTokens: 100, CompletionTokens: 20}},
		{"reasoning_calls.json", false, "Done searching.", "", []domain.ToolCall{
			{ID: "call_", Type: "function", Name: "report_helpful_ids", Arguments: `{"ids":["d1","d2"]}`},
		}, &domain.Usage{PromptTokens: 50, CompletionTokens: 10}},
		{"structured.sse", true, "Search both.", "", []domain.ToolCall{
			{ID: "chatcmpl-tool-b1", Type: "function", Name: "search", Arguments: `{"limit":10,"query":"Ed Wood"}`},
			{ID: "chatcmpl-tool-b2", Type: "function", Name: "read", Arguments: `{"id":"d1"}`},
		}, &domain.Usage{PromptTokens: 200, CompletionTokens: 30}},
		{"hermes.sse", true, "", "", []domain.ToolCall{
			{ID: "call_", Type: "function", Name: "text_search", Arguments: `{"query":"BM25"}`},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			var sent map[string]any
			srv := fakeUpstream(t, tt.fixture, &sent)
			choices, usage, err := newEngine(t, srv.URL, 5*time.Second).Generate(context.Background(), request(tt.stream))
			if err != nil {
				t.Fatal(err)
			}
			c := choices[0]
			for i := range c.ToolCalls { // generated ids are hashes: compare their prefix
				if tt.calls[i].ID == "call_" && len(c.ToolCalls[i].ID) > 5 {
					c.ToolCalls[i].ID = "call_"
				}
			}
			if diff := cmp.Diff(tt.calls, c.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if c.Reasoning != tt.reasoning || c.Content != tt.content || c.FinishReason != domain.FinishToolCalls {
				t.Errorf("choice %+v", c)
			}
			if diff := cmp.Diff(tt.usage, usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if sent["model"] != "qwen" || sent["logprobs"] != true || sent["top_k"] != 20.0 || sent["add_generation_prompt"] != true ||
				sent["continue_final_message"] != false || sent["echo"] != nil || (sent["stream"] == true) != tt.stream {
				t.Errorf("sent %v: want the upstream model and the pass-through parameters, without echo (the chat service applies it)", sent)
			}
		})
	}
}

func TestGenerateFailures(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	garbageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "<html>oops</html>")
	}))
	t.Cleanup(garbageSrv.Close)
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		_ = conn.Close()
	}))
	t.Cleanup(reset.Close)
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()
	status := func(code int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"nope"}}`, code)
		}))
		t.Cleanup(s.Close)
		return s
	}
	tests := []struct {
		name   string
		url    string
		stream bool
		kind   domain.Kind
	}{
		{"timeout", hang.URL, false, domain.KindTimeout},
		{"garbage", garbageSrv.URL, false, domain.KindUpstream},
		{"reset", reset.URL, false, domain.KindUpstream},
		{"unreachable", refusedURL, false, domain.KindUnavailable},
		{"truncated stream", fakeUpstream(t, "truncated.sse", nil).URL, true, domain.KindUpstream},
		{"upstream 500", status(500).URL, false, domain.KindUpstream},
		{"upstream 400", status(400).URL, false, domain.KindInvalid},
		{"upstream 429", status(429).URL, false, domain.KindRateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, _, err := newEngine(t, tt.url, 300*time.Millisecond).Generate(context.Background(), request(tt.stream))
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != tt.kind || de.Message == "" {
				t.Fatalf("err %v (%T), want kind %s", err, err, tt.kind)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{}, {URL: "x", Model: "m"}, {URL: "ftp://h/v1", Model: "m"}, {URL: "http://h/v1"}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

package loadtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// FakeUpstream is an OpenAI-compatible chat completions server that answers
// every request at once with a fixed reply (a search tool call), for
// measuring the overhead of capsuled's svc-1 upstream path: the difference
// between a turn through capsuled and the same turn sent here directly.
// It serves POST /v1/chat/completions and GET /v1/models.
type FakeUpstream struct {
	// Delay is added to every reply (default none).
	Delay    time.Duration
	requests atomic.Int64
}

// Requests is how many chat completions it has answered.
func (f *FakeUpstream) Requests() int64 { return f.requests.Load() }

// ServeHTTP implements http.Handler.
func (f *FakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake","object":"model","created":0,"owned_by":"loadtest"}]}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		var req struct {
			Model string `json:"model"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		if f.Delay > 0 {
			time.Sleep(f.Delay)
		}
		n := f.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-fake-`+strconv.FormatInt(n, 10)+`","object":"chat.completion","created":0,"model":"`+jsonEscape(req.Model)+`",`+
			`"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"<think>search first</think>",`+
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"transformer\",\"limit\":5}"}}]}}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	default:
		http.NotFound(w, r)
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

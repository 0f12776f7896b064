// Package apiclient is the command line's client of a running capsuled
// server: the generated API client with the key set, API error bodies
// rendered for a terminal, the agent loop's tools run against a capsule's
// query API (Backend), and svc-1's turns answered over HTTP through the
// official OpenAI Go SDK (SDKModel). `capsuled ask` and `capsuled bench
// agent` share it, so the benchmark measures what the command runs.
package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"capsuled/gen"
)

// New returns the generated API client for the server at url, sending key as
// a bearer token, each request limited to timeout.
func New(url, key string, timeout time.Duration) (*gen.ClientWithResponses, error) {
	return gen.NewClientWithResponses(strings.TrimRight(url, "/"),
		gen.WithHTTPClient(&http.Client{Timeout: timeout}),
		gen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
}

// Error renders a non-2xx response for the terminal: the API's error body
// (status, type, param and message) when it is one, else the start of the
// raw body.
func Error(status int, body []byte) error {
	var e gen.ErrorResponse
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg := e.Error.Message
		if e.Error.Param != nil {
			msg = *e.Error.Param + ": " + msg
		}
		return fmt.Errorf("%d %s: %s", status, e.Error.Type, msg)
	}
	return fmt.Errorf("unexpected response %d: %.300s", status, body)
}

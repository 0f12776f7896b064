package app_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"capsuled/internal/app"
	"capsuled/internal/loadtest"
)

// upstreamTurn is the svc-1 request of the load generator's chat operation.
const upstreamTurn = `{"model":"svc-1","messages":[{"role":"system","content":"You are a retrieval agent. Tools: search, text_search, read, report_helpful_ids."},{"role":"user","content":"Which paper introduced the transformer?"}],"tools":[{"type":"function","function":{"name":"dummy"}}]}`

// BenchmarkUpstreamPath measures what capsuled adds to a svc-1 turn served
// by an upstream engine: "direct" sends the turn to a fake OpenAI-compatible
// upstream (loadtest.FakeUpstream, which answers a search tool call at once)
// over loopback HTTP; "capsuled" sends the same turn to capsuled (SQLite,
// --engine upstream pointing at that fake, rate limits off) over loopback
// HTTP. The difference of the two ns/op is capsuled's own cost per turn:
// authentication, validation against openapi.yaml, conversion, the upstream
// call's client side, tool-call normalisation and the reply.
//
//	go test -run '^$' -bench BenchmarkUpstreamPath -benchtime 5s ./internal/app/
func BenchmarkUpstreamPath(b *testing.B) {
	up := httptest.NewServer(&loadtest.FakeUpstream{})
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := app.Config{DataDir: b.TempDir(), Chat: app.ChatConfig{Engine: "upstream", UpstreamURL: up.URL + "/v1", UpstreamModel: "fake"}}
	cfg.Capsules.Embedder = "off"
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	key, _, err := a.Auth().EnsureAdminKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go a.Serve(ctx, l) //nolint:errcheck // ends with ctx
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	turn := func(b *testing.B, url, key string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(upstreamTurn)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"tool_calls"`)) {
			b.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	for _, c := range []struct{ name, url, key string }{
		{"direct", up.URL + "/v1/chat/completions", "x"},
		{"capsuled", "http://" + l.Addr().String() + "/v1/chat/completions", key},
	} {
		b.Run(c.name, func(b *testing.B) {
			turn(b, c.url, c.key) // warm the connections
			b.ReportAllocs()
			for b.Loop() {
				turn(b, c.url, c.key)
			}
		})
	}
}

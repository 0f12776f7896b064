package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"capsuled/internal/app"
)

// The dashboard and MCP, served beside the generated API, are in its observe
// layer too: each answer carries a request id and each request is counted in
// the HTTP metrics under its route.
func TestDashboardAndMCPAreObserved(t *testing.T) {
	t.Parallel()
	_, url := startApp(t, app.Config{})
	get := func(method, path, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/dashboard/", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
	} {
		resp := get(c.method, c.path, c.body)
		if id := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_") {
			t.Errorf("%s %s: status %d, X-Request-Id %q; want a request id", c.method, c.path, resp.StatusCode, id)
		}
	}
	metrics := scrape(t, url)
	for _, route := range []string{`route="dashboard"`, `route="mcp"`} {
		if !strings.Contains(metrics, "capsuled_http_requests_total{method=") || !strings.Contains(metrics, route) {
			t.Errorf("metrics lack requests with %s", route)
		}
	}
}

// scrape returns the server's /metrics text (url is http://host:port).
func scrape(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

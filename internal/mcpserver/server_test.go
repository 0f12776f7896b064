package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/domain"
	"capsuled/internal/mcpserver"
)

// bearer adds a bearer credential to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session over streamable HTTP with the Go SDK's client.
func (f *fixture) connect(t *testing.T, credential string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "capsuled-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: f.base + "/mcp", HTTPClient: &http.Client{Transport: bearer(credential)}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// call calls a tool and returns its result, its text and its structured
// content decoded into out (when not nil and the call succeeded).
func call(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", name, args, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res, strings.Join(text, "\n")
}

// mustFail calls a tool that must answer a tool error containing want.
func mustFail(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, want string) {
	t.Helper()
	res, text := call(t, s, name, args, nil)
	if !res.IsError || !strings.Contains(text, want) {
		t.Errorf("%s(%v) = error %v %q, want a tool error with %q", name, args, res.IsError, text, want)
	}
}

// mustRefuse calls a tool the credential may not use: the call fails, with a
// tool error or a protocol error (a tool that is not listed is unknown),
// whose message contains want.
func mustRefuse(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, want string) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	msg := ""
	switch {
	case err != nil:
		msg = err.Error()
	case res.IsError:
		msg = res.Content[0].(*mcp.TextContent).Text
	default:
		t.Errorf("%s(%v) answered, want a refusal", name, args)
		return
	}
	if !strings.Contains(msg, want) {
		t.Errorf("%s(%v) refused with %q, want %q in it", name, args, msg, want)
	}
}

type searchOut struct {
	Query   string `json:"query"`
	Mode    string `json:"mode"`
	Results []struct {
		ID      string  `json:"id"`
		Capsule string  `json:"capsule"`
		URI     string  `json:"uri"`
		Title   string  `json:"title"`
		Score   float64 `json:"score"`
		Snippet string  `json:"snippet"`
	} `json:"results"`
}

var (
	capsuleToolNames = []string{"list_capsules", "read", "search", "text_search"}
	memoryToolNames  = []string{"forget", "recall", "remember"}
	allToolNames     = []string{"forget", "list_capsules", "read", "recall", "remember", "search", "text_search"}
)

// TestHTTP runs every tool over streamable HTTP with the Go SDK's client,
// against one server.
func TestHTTP(t *testing.T) {
	f := startFixture(t)

	t.Run("tools follow the credential's scopes", func(t *testing.T) {
		for role, want := range map[string][]string{
			"all": allToolNames, "alpha": allToolNames, "nomemory": capsuleToolNames, "memory": memoryToolNames,
		} {
			if got := toolNames(t, f.connect(t, f.keys[role])); !slices.Equal(got, want) {
				t.Errorf("%s key: tools %v, want %v", role, got, want)
			}
		}
		if got := toolNames(t, f.connect(t, f.token)); !slices.Equal(got, memoryToolNames) {
			t.Errorf("access token: tools %v, want %v", got, memoryToolNames)
		}
	})

	t.Run("refused credentials", func(t *testing.T) {
		for name, h := range map[string]string{
			"no header": "", "not bearer": "Basic abc", "unknown key": "Bearer csk_unknown", "revoked key": "Bearer " + f.keys["revoked"],
		} {
			status, body, hdr := rawPost(t, f.base+"/mcp", h)
			if status != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: %d %q (WWW-Authenticate %q), want 401", name, status, body, hdr.Get("WWW-Authenticate"))
			}
		}
		// Behind a reverse proxy on the same machine: a public Host on a
		// loopback connection is served (the credential is what counts).
		status, body, _ := rawPostHost(t, f.base+"/mcp", "rag.example.com", "Bearer "+f.keys["all"])
		if status != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
			t.Errorf("a proxied Host: %d %s", status, body)
		}
		status, body, _ = rawPost(t, f.base+"/mcp", "Bearer "+f.keys["chat"])
		if status != http.StatusForbidden || !strings.Contains(body, `"code":"missing_scope"`) || !strings.Contains(body, `"type":"permission_error"`) {
			t.Errorf("chat-only key: %d %s, want 403 missing_scope", status, body)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil)
		if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: f.base + "/mcp", HTTPClient: &http.Client{Transport: bearer("csk_wrong")}, MaxRetries: -1,
		}, nil); err == nil {
			t.Error("the SDK client connected with a wrong key")
		}
	})

	t.Run("search", func(t *testing.T) {
		s := f.connect(t, f.keys["all"])
		var out searchOut
		res, text := call(t, s, "search", map[string]any{"query": "Who discovered radium and polonium?", "limit": 3}, &out)
		if res.IsError || len(out.Results) == 0 || out.Results[0].ID != f.items["alpha/curie"] || out.Mode != "hybrid" {
			t.Fatalf("search: %v %q %+v", res.IsError, text, out)
		}
		r := out.Results[0]
		if r.Capsule != "alpha" || r.Title != "Marie Curie" || r.URI != "capsule://alpha/"+r.ID || r.Score <= 0 || !strings.Contains(r.Snippet, "polonium") {
			t.Errorf("result %+v", r)
		}
		if !strings.Contains(text, "id="+r.ID) || !strings.Contains(text, `title="Marie Curie"`) || !strings.Contains(text, "score=") {
			t.Errorf("readable text lacks id, title or score: %q", text)
		}
		// Every capsule by default, one list best first.
		res, _ = call(t, s, "text_search", map[string]any{"query": "radium"}, &out)
		caps := map[string]bool{}
		for i, r := range out.Results {
			caps[r.Capsule] = true
			if i > 0 && r.Score > out.Results[i-1].Score {
				t.Errorf("results out of order: %+v", out.Results)
			}
		}
		if res.IsError || out.Mode != "keyword" || !caps["alpha"] || !caps["beta"] {
			t.Errorf("text_search over all capsules: %+v", out)
		}
		// Filters of the wishlist.
		call(t, s, "search", map[string]any{"query": "Nobel Prize", "capsule": "alpha", "metadata": map[string]any{"topic": "physics"}}, &out)
		for _, r := range out.Results {
			if r.ID != f.items["alpha/bohr"] {
				t.Errorf("metadata filter topic=physics let through %+v", r)
			}
		}
		call(t, s, "text_search", map[string]any{"query": "radium", "item_ids": []string{f.items["beta/rhine"]}}, &out)
		if len(out.Results) != 1 || out.Results[0].ID != f.items["beta/rhine"] {
			t.Errorf("item_ids filter: %+v", out.Results)
		}
		call(t, s, "text_search", map[string]any{"query": "radium", "added_before": "2001-01-01T00:00:00Z"}, &out)
		if len(out.Results) != 0 {
			t.Errorf("added_before 2001 found %+v", out.Results)
		}
		res, text = call(t, s, "text_search", map[string]any{"query": "zzzyzzx"}, &out)
		if res.IsError || len(out.Results) != 0 || !strings.Contains(text, "No results") {
			t.Errorf("no match: %v %q %+v", res.IsError, text, out)
		}
	})

	t.Run("a key limited to one capsule", func(t *testing.T) {
		s := f.connect(t, f.keys["alpha"])
		var caps struct {
			Capsules []struct{ Name string } `json:"capsules"`
		}
		call(t, s, "list_capsules", nil, &caps)
		if len(caps.Capsules) != 1 || caps.Capsules[0].Name != "alpha" {
			t.Errorf("list_capsules: %+v", caps)
		}
		var out searchOut
		call(t, s, "text_search", map[string]any{"query": "radium"}, &out)
		for _, r := range out.Results {
			if r.Capsule != "alpha" {
				t.Errorf("a result from capsule %s", r.Capsule)
			}
		}
		if len(out.Results) == 0 {
			t.Error("no result from alpha")
		}
		mustFail(t, s, "search", map[string]any{"query": "Rhine", "capsule": "beta"}, "capsule_not_allowed")
		mustFail(t, s, "read", map[string]any{"id": f.items["beta/rhine"], "capsule": "beta"}, "capsule_not_allowed")
		mustFail(t, s, "read", map[string]any{"id": "capsule://beta/" + f.items["beta/rhine"]}, "capsule_not_allowed")
		mustFail(t, s, "read", map[string]any{"id": f.items["beta/rhine"]}, "item_not_found")
		res, err := s.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			if !strings.HasPrefix(r.URI, "capsule://alpha/") {
				t.Errorf("resource %s listed", r.URI)
			}
		}
		if len(res.Resources) != 3 {
			t.Errorf("%d resources, want alpha's 3", len(res.Resources))
		}
		if _, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "capsule://beta/" + f.items["beta/rhine"]}); err == nil || !strings.Contains(err.Error(), "capsule_not_allowed") {
			t.Errorf("reading beta's resource: %v", err)
		}
	})

	t.Run("read pages through a long item", func(t *testing.T) {
		s := f.connect(t, f.keys["all"])
		var got strings.Builder
		offset, pages := 0, 0
		for {
			var out struct {
				ID         string `json:"id"`
				Text       string `json:"text"`
				Offset     int    `json:"offset"`
				TotalChars int    `json:"total_chars"`
				NextOffset *int   `json:"next_offset"`
			}
			res, text := call(t, s, "read", map[string]any{"id": f.items["alpha/notebook"], "offset": offset, "max_chars": 10000}, &out)
			if res.IsError || out.Offset != offset || out.TotalChars != len(f.longText) {
				t.Fatalf("read at %d: %v %.200q %+v", offset, res.IsError, text, out)
			}
			got.WriteString(out.Text)
			pages++
			if out.NextOffset == nil {
				break
			}
			offset = *out.NextOffset
		}
		if got.String() != f.longText || pages != 4 {
			t.Errorf("read %d pages, text equal: %v", pages, got.String() == f.longText)
		}
		var out struct{ Text string }
		call(t, s, "read", map[string]any{"id": "capsule://alpha/" + f.items["alpha/curie"]}, &out)
		if !strings.HasPrefix(out.Text, "Marie Curie") {
			t.Errorf("read by URI: %q", out.Text)
		}
		r, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "capsule://alpha/" + f.items["alpha/curie"]})
		if err != nil || len(r.Contents) != 1 || !strings.HasPrefix(r.Contents[0].Text, "Marie Curie") {
			t.Errorf("resources/read: %v %+v", err, r)
		}
		mustFail(t, s, "read", map[string]any{"id": "itm_nope"}, "item_not_found")
		mustFail(t, s, "read", map[string]any{"id": "itm_nope", "capsule": "alpha"}, "not_found")
	})

	t.Run("memory", func(t *testing.T) {
		s := f.connect(t, f.keys["all"])
		var m struct {
			ID        string `json:"id"`
			Namespace string `json:"namespace"`
		}
		res, text := call(t, s, "remember", map[string]any{"content": "The team's standup moved to 9:30 on Tuesdays.", "namespace": "ops"}, &m)
		if res.IsError || m.ID == "" || m.Namespace != "ops" {
			t.Fatalf("remember: %q %+v", text, m)
		}
		type recallOut struct {
			Memories []struct {
				ID      string  `json:"id"`
				Content string  `json:"content"`
				Score   float64 `json:"score"`
				Tokens  int     `json:"tokens"`
			} `json:"memories"`
			Tokens int `json:"tokens"`
		}
		var rec recallOut
		res, text = call(t, s, "recall", map[string]any{"query": "When is the standup?", "namespace": "ops", "budget_tokens": 200}, &rec)
		if res.IsError || len(rec.Memories) != 1 || rec.Memories[0].ID != m.ID || rec.Tokens <= 0 || !strings.Contains(text, m.ID) {
			t.Fatalf("recall: %q %+v", text, rec)
		}
		call(t, s, "forget", map[string]any{"id": m.ID, "namespace": "ops"}, nil)
		call(t, s, "recall", map[string]any{"query": "When is the standup?", "namespace": "ops"}, &rec)
		if len(rec.Memories) != 0 {
			t.Errorf("recall after forget: %+v", rec)
		}
		mustFail(t, s, "forget", map[string]any{"id": m.ID, "namespace": "ops"}, "not_found")
		mustFail(t, s, "remember", map[string]any{"content": "x", "namespace": "bad namespace!"}, "namespace")

		// The namespace allow-list of a key and of its access token.
		for _, cred := range []string{f.keys["memory"], f.token} {
			s := f.connect(t, cred)
			if res, text := call(t, s, "remember", map[string]any{"content": "Deploys freeze on Fridays.", "namespace": "team"}, nil); res.IsError {
				t.Errorf("remember in team: %q", text)
			}
			mustFail(t, s, "remember", map[string]any{"content": "x"}, "namespace_not_allowed")
			mustFail(t, s, "recall", map[string]any{"query": "x", "namespace": "ops"}, "namespace_not_allowed")
			mustRefuse(t, s, "search", map[string]any{"query": "radium"}, `unknown tool "search"`)
		}
	})

	t.Run("a key without the memory scope", func(t *testing.T) {
		s := f.connect(t, f.keys["nomemory"])
		for _, name := range memoryToolNames {
			mustRefuse(t, s, name, map[string]any{"query": "x", "content": "x", "id": "x"}, "unknown tool \""+name+"\"")
		}
	})

	t.Run("relay", func(t *testing.T) {
		local, relayEnd := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mcpserver.Relay(ctx, relayEnd, f.base+"/mcp", f.keys["alpha"], nil) }()
		s, err := mcp.NewClient(&mcp.Implementation{Name: "relay-test"}, nil).Connect(ctx, local, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(t, s); !slices.Equal(got, allToolNames) {
			t.Errorf("tools through the relay: %v", got)
		}
		var caps struct {
			Capsules []struct{ Name string } `json:"capsules"`
		}
		call(t, s, "list_capsules", nil, &caps)
		if len(caps.Capsules) != 1 || caps.Capsules[0].Name != "alpha" {
			t.Errorf("list_capsules through the relay: %+v", caps)
		}
		mustFail(t, s, "search", map[string]any{"query": "x", "capsule": "beta"}, "capsule_not_allowed")
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("relay ended with %v", err)
		}
		cancel()
	})

	t.Run("bad arguments are tool errors", func(t *testing.T) {
		s := f.connect(t, f.keys["all"])
		for _, c := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"search", map[string]any{}, "query"},
			{"search", map[string]any{"query": ""}, "query"},
			{"search", map[string]any{"query": "   "}, "query"},
			{"search", map[string]any{"query": "x", "limit": "ten"}, "limit"},
			{"search", map[string]any{"query": "x", "limit": 1000}, "limit"},
			{"search", map[string]any{"query": "x", "limit": 2.5}, "limit"},
			{"search", map[string]any{"query": "x", "colour": "red"}, "colour"},
			{"search", map[string]any{"query": "x", "capsule": "Not A Name"}, "capsule"},
			{"search", map[string]any{"query": "x", "capsule": "nosuch"}, "not_found"},
			{"search", map[string]any{"query": "x", "kinds": []string{"video"}}, "kinds"},
			{"search", map[string]any{"query": "x", "added_after": "yesterday"}, "added_after"},
			{"search", map[string]any{"query": "x", "min_score": 3}, "min_score"},
			{"search", map[string]any{"query": "x", "metadata": map[string]any{"k": []int{1}}}, "metadata"},
			{"search", map[string]any{"query": strings.Repeat("x", domain.MaxQueryBytes+1)}, "query"},
			{"read", map[string]any{}, "id"},
			{"read", map[string]any{"id": f.items["alpha/curie"], "offset": -1}, "offset"},
			{"read", map[string]any{"id": f.items["alpha/curie"], "max_chars": 0.5}, "max_chars"},
			{"read", map[string]any{"id": f.items["alpha/curie"], "capsule": "beta"}, "not_found"},
			{"remember", map[string]any{"content": ""}, "content"},
			{"remember", map[string]any{"content": "x", "kind": "turn"}, "kind"},
			{"recall", map[string]any{"query": "x", "budget_tokens": -5}, "budget_tokens"},
			{"forget", map[string]any{}, "id"},
		} {
			mustFail(t, s, c.tool, c.args, c.want)
		}
		if _, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "nosuchtool"}); err == nil {
			t.Error("an unknown tool answered")
		}
		// The server still answers.
		if res, _ := call(t, s, "list_capsules", nil, nil); res.IsError {
			t.Error("list_capsules failed after the bad calls")
		}
	})
}

// rawPost sends an MCP initialize request with the given Authorization
// header and returns the status, body and headers.
func rawPost(t *testing.T, url, authorization string) (int, string, http.Header) {
	t.Helper()
	return rawPostHost(t, url, "", authorization)
}

// rawPostHost is rawPost with the Host header set to host (when not empty).
func rawPostHost(t *testing.T, url, host, authorization string) (int, string, http.Header) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestEndpointURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080/mcp",
		"http://127.0.0.1:8080/":        "http://127.0.0.1:8080/mcp",
		"http://127.0.0.1:8080/v1":      "http://127.0.0.1:8080/mcp",
		"https://rag.example.com/mcp":   "https://rag.example.com/mcp",
		"https://example.com/capsuled/": "https://example.com/capsuled/mcp",
		"127.0.0.1:8080":                "",
		"ftp://example.com":             "",
		"http://":                       "",
	} {
		got, err := mcpserver.EndpointURL(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("EndpointURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

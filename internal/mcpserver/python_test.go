package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The MCP client tests with the official MCP Python SDK (PyPI mcp):
// .ci/mcp-python.sh installs it into .cache/mcp-venv, and .ci/test sets
// CAPSULED_MCP_PYTHON_REQUIRED so that CI fails rather than skips without it.

// pythonSDK returns a Python interpreter with the MCP SDK, or skips.
func pythonSDK(t *testing.T) string {
	t.Helper()
	py := os.Getenv("CAPSULED_MCP_PYTHON")
	if py == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		py = filepath.Join(root, ".cache", "mcp-venv", "bin", "python")
	}
	out, err := exec.Command(py, "-c", "import mcp, httpx2, importlib.metadata as m; print(m.version('mcp'))").CombinedOutput()
	if err != nil {
		msg := "the MCP Python SDK is not installed (" + py + ": " + strings.TrimSpace(string(out)) + "); run bash .ci/mcp-python.sh, or set CAPSULED_MCP_PYTHON to a python with the PyPI package mcp"
		if os.Getenv("CAPSULED_MCP_PYTHON_REQUIRED") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Logf("MCP Python SDK %s (%s)", strings.TrimSpace(string(out)), py)
	return py
}

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

// TestMain removes the binary capsuledBinary built (74 MB per run, which
// otherwise stays in the temporary directory).
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// capsuledBinary builds cmd/capsuled once for the stdio tests.
func capsuledBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "capsuled-mcp-test")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "capsuled")
		out, err := exec.Command("go", "build", "-o", binPath, "capsuled/cmd/capsuled").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// step is one request of a plan (see testdata/mcp_client.py).
type step struct {
	Op   string         `json:"op"`
	Name string         `json:"name,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	URI  string         `json:"uri,omitempty"`
}

// result is what the Python client saw for one step.
type result struct {
	Tools []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	IsError    bool           `json:"is_error"`
	Text       string         `json:"text"`
	Structured map[string]any `json:"structured"`
	Resources  []string       `json:"resources"`
	Templates  []string       `json:"templates"`
	Error      string         `json:"error"`
}

type report struct {
	SDK          string   `json:"sdk"`
	ConnectError string   `json:"connect_error"`
	Results      []result `json:"results"`
	HTTPStatuses []int    `json:"http_statuses"`
}

// runPython runs a plan with the Python SDK's client over a transport
// ("http": url, key; "stdio": command, args) and returns what it saw.
func runPython(t *testing.T, py string, transport map[string]any, steps ...step) report {
	t.Helper()
	plan := map[string]any{"steps": steps}
	for k, v := range transport {
		plan[k] = v
	}
	b, _ := json.Marshal(plan)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/mcp_client.py")
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python client: %v\n%s", err, stderr.String())
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("python client output %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	if r.ConnectError == "" && len(r.Results) != len(steps) {
		t.Fatalf("%d results for %d steps", len(r.Results), len(steps))
	}
	return r
}

func (r result) toolNames() []string {
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// everyTool lists the tools, calls each one with good arguments and then
// with bad ones, and lists and reads resources. The memory forget deletes
// was written through the REST API beforehand.
func (f *fixture) everyTool(forgetID string) []step {
	curie := f.items["alpha/curie"]
	return []step{
		{Op: "list_tools"},
		{Op: "call", Name: "list_capsules"},
		{Op: "call", Name: "search", Args: map[string]any{"query": "Who discovered polonium?", "limit": 2}},
		{Op: "call", Name: "text_search", Args: map[string]any{"query": "Rhine Basel", "capsule": "beta"}},
		{Op: "call", Name: "read", Args: map[string]any{"id": curie}},
		{Op: "call", Name: "remember", Args: map[string]any{"content": "The quarterly review is on the third Thursday.", "namespace": "py"}},
		{Op: "call", Name: "recall", Args: map[string]any{"query": "When is the quarterly review?", "namespace": "py", "budget_tokens": 300}},
		{Op: "call", Name: "forget", Args: map[string]any{"id": forgetID, "namespace": "py"}},
		{Op: "list_resources"},
		{Op: "list_templates"},
		{Op: "read_resource", URI: "capsule://alpha/" + curie},
		// Bad arguments: tool errors, and the session goes on.
		{Op: "call", Name: "search", Args: map[string]any{"query": "x", "limit": "ten"}},
		{Op: "call", Name: "read", Args: map[string]any{}},
		{Op: "call", Name: "recall", Args: map[string]any{"query": "x", "budget_tokens": -1}},
		{Op: "call", Name: "forget", Args: map[string]any{"id": forgetID, "namespace": "py"}},
		{Op: "call", Name: "nosuchtool"},
		{Op: "call", Name: "list_capsules"},
	}
}

// checkEveryTool judges the results of everyTool.
func (f *fixture) checkEveryTool(t *testing.T, r report, wantTools []string) {
	t.Helper()
	if r.ConnectError != "" {
		t.Fatalf("connect: %s", r.ConnectError)
	}
	res := r.Results
	if got := res[0].toolNames(); !slices.Equal(got, wantTools) {
		t.Errorf("tools %v, want %v", got, wantTools)
	}
	for _, tool := range res[0].Tools {
		if tool.InputSchema["type"] != "object" {
			t.Errorf("tool %s: input schema %v", tool.Name, tool.InputSchema)
		}
	}
	ok := func(i int, name string, want ...string) {
		t.Helper()
		if res[i].IsError || res[i].Error != "" || res[i].Structured == nil {
			t.Errorf("%s: error %v %q %q", name, res[i].IsError, res[i].Error, res[i].Text)
			return
		}
		for _, w := range want {
			if !strings.Contains(res[i].Text, w) {
				t.Errorf("%s: text %q lacks %q", name, res[i].Text, w)
			}
		}
	}
	ok(1, "list_capsules", "alpha", "beta")
	ok(2, "search", "id="+f.items["alpha/curie"], `title="Marie Curie"`, "score=")
	ok(3, "text_search", "id="+f.items["beta/rhine"], "capsule=beta")
	ok(4, "read", "Marie Curie won the Nobel Prize")
	ok(5, "remember", "Remembered in namespace py")
	ok(6, "recall", "quarterly review")
	ok(7, "forget", "Forgot")
	if len(res[8].Resources) != 4 || res[8].Error != "" {
		t.Errorf("resources/list: %v %s", res[8].Resources, res[8].Error)
	}
	if !slices.Equal(res[9].Templates, []string{"capsule://{capsule}/{item}"}) {
		t.Errorf("resource templates %v %s", res[9].Templates, res[9].Error)
	}
	if !strings.HasPrefix(res[10].Text, "Marie Curie") {
		t.Errorf("resources/read: %q %s", res[10].Text, res[10].Error)
	}
	for i, want := range map[int]string{11: "limit", 12: "id", 13: "budget_tokens", 14: "not_found"} {
		if !res[i].IsError || !strings.Contains(res[i].Text, want) {
			t.Errorf("bad call %d: error %v %q, want a tool error naming %q", i, res[i].IsError, res[i].Text, want)
		}
	}
	if !strings.Contains(res[15].Error, `unknown tool "nosuchtool"`) {
		t.Errorf("unknown tool: %+v", res[15])
	}
	ok(16, "list_capsules after the bad calls")
}

// memoryFor writes a memory through the REST API and returns its id.
func (f *fixture) memoryFor(t *testing.T, ns, content string) string {
	t.Helper()
	var m struct {
		ID string `json:"id"`
	}
	f.rest(t, "POST", "/v1/memory/namespaces/"+ns+"/memories", map[string]any{"content": content}, &m)
	return m.ID
}

// TestPythonSDK drives the server with the official MCP Python SDK's
// client, over streamable HTTP and over stdio (capsuled mcp, relaying and
// serving a data directory).
func TestPythonSDK(t *testing.T) {
	py := pythonSDK(t)
	f := startFixture(t)
	http := func(key string) map[string]any {
		return map[string]any{"transport": "http", "url": f.base + "/mcp", "key": key}
	}
	stdio := func(args ...string) map[string]any {
		return map[string]any{"transport": "stdio", "command": capsuledBinary(t), "args": append([]string{"mcp"}, args...)}
	}
	// The data directory mode opens the fixture's store beside the running
	// server, with the same embedder.
	dataArgs := []string{"--data", f.dataDir, "--model-fetch=false"}
	if os.Getenv("CAPSULED_ONNX_DIR") == "" || os.Getenv("CAPSULED_ORT_LIB") == "" {
		dataArgs = append(dataArgs, "--embedder", "off")
	}

	t.Run("every tool over streamable HTTP", func(t *testing.T) {
		r := runPython(t, py, http(f.keys["all"]), f.everyTool(f.memoryFor(t, "py", "An old note to forget."))...)
		f.checkEveryTool(t, r, allToolNames)
	})
	t.Run("every tool over stdio, relayed to the server", func(t *testing.T) {
		r := runPython(t, py, stdio("--url", f.base, "--key", f.keys["all"]), f.everyTool(f.memoryFor(t, "py", "Another note to forget."))...)
		f.checkEveryTool(t, r, allToolNames)
	})
	t.Run("every tool over stdio from the data directory", func(t *testing.T) {
		r := runPython(t, py, stdio(append(dataArgs, "--read-write")...), f.everyTool(f.memoryFor(t, "py", "A third note to forget."))...)
		f.checkEveryTool(t, r, allToolNames)
	})
	t.Run("the initialize handshake of 2025 clients", func(t *testing.T) {
		for name, tr := range map[string]map[string]any{
			"http": http(f.keys["all"]), "stdio": stdio("--url", f.base, "--key", f.keys["all"]),
		} {
			tr["mode"] = "legacy"
			r := runPython(t, py, tr, step{Op: "list_tools"},
				step{Op: "call", Name: "search", Args: map[string]any{"query": "radium polonium"}},
				step{Op: "read_resource", URI: "capsule://alpha/" + f.items["alpha/curie"]})
			if r.ConnectError != "" {
				t.Fatalf("%s: %s", name, r.ConnectError)
			}
			if got := r.Results[0].toolNames(); !slices.Equal(got, allToolNames) {
				t.Errorf("%s: tools %v", name, got)
			}
			if r.Results[1].IsError || !strings.Contains(r.Results[1].Text, "id="+f.items["alpha/curie"]) {
				t.Errorf("%s: search %+v", name, r.Results[1])
			}
			if !strings.HasPrefix(r.Results[2].Text, "Marie Curie") {
				t.Errorf("%s: resources/read %+v", name, r.Results[2])
			}
		}
	})
	t.Run("the data directory is read-only by default", func(t *testing.T) {
		r := runPython(t, py, stdio(dataArgs...), step{Op: "list_tools"},
			step{Op: "call", Name: "remember", Args: map[string]any{"content": "x"}},
			step{Op: "call", Name: "recall", Args: map[string]any{"query": "quarterly review", "namespace": "py"}})
		if r.ConnectError != "" {
			t.Fatal(r.ConnectError)
		}
		want := []string{"list_capsules", "read", "recall", "search", "text_search"}
		if got := r.Results[0].toolNames(); !slices.Equal(got, want) {
			t.Errorf("tools %v, want %v", got, want)
		}
		if !strings.Contains(r.Results[1].Error, `unknown tool "remember"`) {
			t.Errorf("remember on a read-only server: %+v", r.Results[1])
		}
		if r.Results[2].IsError || !strings.Contains(r.Results[2].Text, "quarterly review") {
			t.Errorf("recall: %+v", r.Results[2])
		}
	})

	t.Run("refused credentials", func(t *testing.T) {
		// Over HTTP the SDK's error does not say why; the responses do.
		for name, c := range map[string]struct {
			key    string
			status int
		}{
			"unknown key": {"csk_not_a_key", 401}, "revoked key": {f.keys["revoked"], 401}, "chat-only key": {f.keys["chat"], 403},
		} {
			r := runPython(t, py, http(c.key), step{Op: "list_tools"})
			refused := r.ConnectError != "" && len(r.HTTPStatuses) > 0
			for _, s := range r.HTTPStatuses {
				refused = refused && s == c.status
			}
			if !refused {
				t.Errorf("http, %s: connect error %q, statuses %v, want only %d", name, r.ConnectError, r.HTTPStatuses, c.status)
			}
		}
		// Over stdio the relay answers the initialize request with the
		// server's refusal.
		r := runPython(t, py, stdio("--url", f.base, "--key", "csk_not_a_key"), step{Op: "list_tools"})
		if !strings.Contains(r.ConnectError, "401: the server refused the key") {
			t.Errorf("stdio, unknown key: %+v", r)
		}
	})

	t.Run("a key limited to one capsule", func(t *testing.T) {
		for name, tr := range map[string]map[string]any{
			"http": http(f.keys["alpha"]), "stdio": stdio("--url", f.base, "--key", f.keys["alpha"]),
		} {
			r := runPython(t, py, tr,
				step{Op: "call", Name: "list_capsules"},
				step{Op: "call", Name: "text_search", Args: map[string]any{"query": "radium"}},
				step{Op: "call", Name: "search", Args: map[string]any{"query": "Rhine", "capsule": "beta"}},
				step{Op: "call", Name: "read", Args: map[string]any{"id": f.items["beta/rhine"], "capsule": "beta"}},
				step{Op: "list_resources"},
				step{Op: "read_resource", URI: "capsule://beta/" + f.items["beta/rhine"]})
			if r.ConnectError != "" {
				t.Fatalf("%s: %s", name, r.ConnectError)
			}
			res := r.Results
			if caps := res[0].Structured["capsules"].([]any); len(caps) != 1 || caps[0].(map[string]any)["name"] != "alpha" {
				t.Errorf("%s: list_capsules %v", name, caps)
			}
			if strings.Contains(res[1].Text, "capsule=beta") || !strings.Contains(res[1].Text, "capsule=alpha") {
				t.Errorf("%s: text_search %q", name, res[1].Text)
			}
			for _, i := range []int{2, 3} {
				if !res[i].IsError || !strings.Contains(res[i].Text, "capsule_not_allowed") {
					t.Errorf("%s: call %d on beta: %+v", name, i, res[i])
				}
			}
			for _, uri := range res[4].Resources {
				if !strings.HasPrefix(uri, "capsule://alpha/") {
					t.Errorf("%s: resource %s listed", name, uri)
				}
			}
			if !strings.Contains(res[5].Error, "capsule_not_allowed") {
				t.Errorf("%s: reading beta's resource: %+v", name, res[5])
			}
		}
	})

	t.Run("a key without the memory scope", func(t *testing.T) {
		steps := []step{{Op: "list_tools"}}
		for _, name := range memoryToolNames {
			steps = append(steps, step{Op: "call", Name: name, Args: map[string]any{"query": "x", "content": "x", "id": "x"}})
		}
		r := runPython(t, py, http(f.keys["nomemory"]), steps...)
		if r.ConnectError != "" {
			t.Fatal(r.ConnectError)
		}
		if got := r.Results[0].toolNames(); !slices.Equal(got, capsuleToolNames) {
			t.Errorf("tools %v, want %v", got, capsuleToolNames)
		}
		for i, name := range memoryToolNames {
			if !strings.Contains(r.Results[i+1].Error, `unknown tool "`+name+`"`) {
				t.Errorf("%s: %+v", name, r.Results[i+1])
			}
		}
	})
}

package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/conformance"
	"capsuled/internal/app"
)

// The suite starts one real capsuled (SQLite in a temporary data directory,
// or PostgreSQL when CAPSULED_CONFORMANCE_STORE=postgres; port 0) and sends every request through a conformance.Recorder. TestMain
// fails the run when any exchange broke openapi.yaml and lists the documented
// operation/status pairs that no test exercised.

var (
	srv      *server
	recorder *conformance.Recorder
)

// clock is the server's clock; tests move it forward (tokens expire).
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

type server struct {
	url   string
	admin string // the admin key created at first start
	clock *clock
	app   *app.App
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "capsuled-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	c := &clock{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("CAPSULED_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	store, dropStore, err := conformanceStore(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "store:", err)
		return 1
	}
	defer dropStore()
	a, err := app.New(ctx, app.Config{DataDir: dir, Store: store, Now: c.now, CapsuleHostSuffix: "capsules.test", MaxBodyBytes: 1 << 20}, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start app:", err)
		return 1
	}
	defer a.Close()
	admin, created, err := a.Auth().EnsureAdminKey(ctx)
	if err != nil || !created {
		fmt.Fprintln(os.Stderr, "admin key:", created, err)
		return 1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	srv = &server{url: "http://" + l.Addr().String(), admin: admin, clock: c, app: a}

	v, err := conformance.NewValidator(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	recorder, err = conformance.NewRecorder(v, nil, "conformance")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer recorder.Close()

	code := m.Run()
	cancel()
	<-done

	if f := recorder.Failures(); len(f) > 0 {
		fmt.Fprintf(os.Stderr, "\nconformance: %d exchange(s) broke openapi.yaml:\n  %s\n", len(f), strings.Join(f, "\n  "))
		code = 1
	}
	if u := recorder.Uncovered(); len(u) > 0 && testingVerbose() {
		fmt.Fprintf(os.Stderr, "\nconformance: %d documented operation/status pairs no test exercised:\n  %s\n", len(u), strings.Join(u, "\n  "))
	}
	fmt.Fprintf(os.Stderr, "conformance: %d operation/status pairs exercised, %d documented ones not yet\n", len(recorder.Seen()), len(recorder.Uncovered()))
	return code
}

func testingVerbose() bool {
	for _, a := range os.Args {
		if strings.HasPrefix(a, "-test.v") {
			return true
		}
	}
	return os.Getenv("CAPSULED_CONFORMANCE_LIST") != ""
}

// response is a decoded response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v.
func (r response) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// apiError is the spec's error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Err decodes the error body.
func (r response) Err(t *testing.T) apiError {
	t.Helper()
	var e apiError
	r.JSON(t, &e)
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an error body: %s", r.Body)
	}
	return e
}

// req describes one request.
type req struct {
	method, path string
	cred         string // Authorization: Bearer cred, when not empty
	header       map[string]string
	body         any // marshalled as JSON unless it is a string or []byte
	host         string
}

// do sends r through the recorder.
func do(t *testing.T, r req) response {
	t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(r.method, srv.url+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.cred != "" {
		hr.Header.Set("Authorization", "Bearer "+r.cred)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	if r.host != "" {
		hr.Host = r.host
	}
	resp, err := recorder.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// expect fails the test unless the response has the status.
func expect(t *testing.T, got response, status int) response {
	t.Helper()
	if got.Status != status {
		t.Fatalf("status %d, want %d: %s", got.Status, status, got.Body)
	}
	return got
}

// newKey creates a key with the admin key and returns its id and secret.
func newKey(t *testing.T, body map[string]any) (id, secret string) {
	t.Helper()
	if body["name"] == nil {
		body["name"] = t.Name()
	}
	resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: srv.admin, body: body}), http.StatusCreated)
	var out struct {
		Key struct {
			ID string `json:"id"`
		} `json:"key"`
		Secret string `json:"secret"`
	}
	resp.JSON(t, &out)
	return out.Key.ID, out.Secret
}

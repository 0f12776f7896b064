package mcpserver_test

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
	"testing"
	"time"

	"capsuled/internal/app"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// fixture is a real capsuled (SQLite store, capsule and memory services,
// the embedding model when the environment names it) serving HTTP on a
// loopback port, with two capsules, a few items and one key per kind of
// access the tests exercise.
type fixture struct {
	base    string // http://127.0.0.1:PORT
	dataDir string
	admin   string
	// keys by role: all (capsules:read + memory), alpha (capsules:read,
	// allow-list [alpha]), nomemory (capsules:read), memory (memory,
	// namespaces [team]), chat (chat only), revoked.
	keys  map[string]string
	token string // an access token minted from the memory key, namespaces [team]
	// items by "capsule/uri".
	items map[string]string
	// longText is the text of alpha's long item.
	longText string
}

// embedderConfig uses the ONNX model when .cache/env.sh's variables are
// set, else keyword search only (search still answers, from BM25).
func embedderConfig(cfg *app.Config) {
	onnx, ort := os.Getenv("CAPSULED_ONNX_DIR"), os.Getenv("CAPSULED_ORT_LIB")
	if onnx != "" && ort != "" {
		cfg.Capsules.Embedder = "onnx"
		cfg.Capsules.ONNXDir, cfg.Capsules.ORTLib = onnx, ort
		return
	}
	cfg.Capsules.Embedder = "off"
}

func startFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &fixture{dataDir: t.TempDir(), keys: map[string]string{}, items: map[string]string{}}
	cfg := app.Config{DataDir: f.dataDir, ShutdownTimeout: time.Second, RateLimitRPM: 0}
	embedderConfig(&cfg)
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
		a.Close()
	})
	f.base = "http://" + l.Addr().String()
	if f.admin, _, err = a.Auth().EnsureAdminKey(ctx); err != nil {
		t.Fatal(err)
	}
	mk := func(role string, k auth.NewKey) {
		k.Name = role
		_, secret, err := a.Auth().CreateKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		f.keys[role] = secret
	}
	read, mem := domain.ScopeCapsulesRead, domain.ScopeMemory
	mk("all", auth.NewKey{Scopes: []domain.Scope{read, mem}})
	mk("alpha", auth.NewKey{Scopes: []domain.Scope{read, mem}, Capsules: []string{"alpha"}})
	mk("nomemory", auth.NewKey{Scopes: []domain.Scope{read}})
	mk("memory", auth.NewKey{Scopes: []domain.Scope{mem}, Namespaces: []string{"team"}})
	mk("chat", auth.NewKey{Scopes: []domain.Scope{domain.ScopeChat}})
	mk("revoked", auth.NewKey{Scopes: []domain.Scope{read, mem}})
	keys, err := a.Auth().ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == "revoked" {
			if _, err := a.Auth().RevokeKey(ctx, k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := a.Auth().Authenticate(ctx, f.keys["memory"])
	if err != nil {
		t.Fatal(err)
	}
	if f.token, _, err = a.Auth().MintToken(ctx, p, []string{"team"}, time.Hour); err != nil {
		t.Fatal(err)
	}

	f.rest(t, "POST", "/v1/capsules", map[string]any{"name": "alpha", "description": "Physics and chemistry notes"}, nil)
	f.rest(t, "POST", "/v1/capsules", map[string]any{"name": "beta", "description": "Rivers of Europe"}, nil)
	f.addItem(t, "alpha", "curie", "Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911 for the discovery of polonium and radium.",
		map[string]any{"title": "Marie Curie", "topic": "chemistry"})
	f.addItem(t, "alpha", "bohr", "Niels Bohr proposed a model of the atom in which electrons move on fixed orbits around the nucleus.",
		map[string]any{"title": "Niels Bohr", "topic": "physics"})
	var long strings.Builder
	for i := 0; long.Len() < 30000; i++ {
		fmt.Fprintf(&long, "Paragraph %d of the laboratory notebook: the spectrometer was calibrated again. ", i)
	}
	f.longText = long.String()
	f.addItem(t, "alpha", "notebook", f.longText, map[string]any{"title": "Laboratory notebook"})
	f.addItem(t, "beta", "rhine", "The Rhine rises in the Swiss Alps, flows through Basel and reaches the North Sea in the Netherlands; radium springs are found along it.",
		map[string]any{"title": "Rhine"})
	return f
}

// rest calls the REST API with the admin key and decodes a 2xx answer.
func (f *fixture) rest(t *testing.T, method, path string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, f.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+f.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) addItem(t *testing.T, capsule, uri, content string, meta map[string]any) {
	t.Helper()
	var it struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	f.rest(t, "POST", "/v1/capsules/"+capsule+"/items?wait=true", map[string]any{"content": content, "uri": uri, "metadata": meta}, &it)
	if it.Status != "ready" {
		t.Fatalf("item %s/%s: %s %s", capsule, uri, it.Status, it.Error)
	}
	f.items[capsule+"/"+uri] = it.ID
}

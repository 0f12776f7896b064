package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// fakeAuth is a fake of the Auth service for the unit tests of this package:
// every credential is a principal with the admin scope, except "panic".
type fakeAuth struct{}

func (fakeAuth) Authenticate(_ context.Context, cred string) (*domain.Principal, error) {
	if cred == "panic" {
		panic("boom: a secret detail")
	}
	if cred == "fail" {
		return nil, errors.New("database is on fire")
	}
	return &domain.Principal{KeyID: "key_" + cred, Scopes: []domain.Scope{domain.ScopeAdmin}}, nil
}
func (fakeAuth) CreateKeyAs(context.Context, *domain.Principal, auth.NewKey) (domain.Key, string, error) {
	return domain.Key{}, "", nil
}
func (fakeAuth) ListKeysAs(context.Context, *domain.Principal) ([]domain.Key, error) { return nil, nil }
func (fakeAuth) GetKeyAs(context.Context, *domain.Principal, string) (domain.Key, error) {
	return domain.Key{}, nil
}
func (fakeAuth) RevokeKeyAs(context.Context, *domain.Principal, string) (domain.Key, error) {
	return domain.Key{}, nil
}
func (fakeAuth) MintToken(context.Context, *domain.Principal, []string, time.Duration) (string, domain.AccessToken, error) {
	return "", domain.AccessToken{}, nil
}

// fakeLimiter refuses every request of key_limited.
type fakeLimiter struct{ charged map[string]int }

func (fakeLimiter) Allow(key string) (bool, time.Duration) {
	if key == "key_limited" {
		return false, 1500 * time.Millisecond
	}
	return true, 0
}
func (f fakeLimiter) Charge(key string, n int) { f.charged[key] += n }

func newTestServer(t testing.TB, deps Deps) (http.Handler, *bytes.Buffer) {
	t.Helper()
	spec, err := LoadSpec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if deps.Auth == nil {
		deps.Auth = fakeAuth{}
	}
	var logs bytes.Buffer
	srv, err := NewServer(Config{}, spec, deps, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler(), &logs
}

func serve(h http.Handler, method, path, cred, body string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func decodeError(t *testing.T, w *httptest.ResponseRecorder) errorDetail {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("not an error body: %s", w.Body)
	}
	return e.Error
}

func TestNewServerNeedsAuth(t *testing.T) {
	t.Parallel()
	spec, err := LoadSpec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(Config{}, spec, Deps{}, nil); err == nil {
		t.Fatal("no error without an Auth service")
	}
}

func TestPanicIsA500WithoutDetails(t *testing.T) {
	t.Parallel()
	h, logs := newTestServer(t, Deps{})
	w := serve(h, "GET", "/v1/keys", "panic", "")
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", w.Code)
	}
	e := decodeError(t, w)
	id := w.Header().Get("X-Request-Id")
	if e.Type != "server_error" || !strings.Contains(e.Message, id) || strings.Contains(w.Body.String(), "secret detail") {
		t.Fatalf("error %+v (request id %s)", e, id)
	}
	if !strings.Contains(logs.String(), "secret detail") || !strings.Contains(logs.String(), id) {
		t.Fatal("the panic was not logged with its request id")
	}
}

func TestUnexpectedErrorIsA500WithoutDetails(t *testing.T) {
	t.Parallel()
	h, logs := newTestServer(t, Deps{})
	w := serve(h, "GET", "/v1/keys", "fail", "")
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "on fire") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "on fire") {
		t.Fatal("the cause was not logged")
	}
}

func TestReadinessReportsFailingChecks(t *testing.T) {
	t.Parallel()
	h, _ := newTestServer(t, Deps{Checks: map[string]Check{
		"store":    func(context.Context) error { return nil },
		"embedder": func(context.Context) error { return errors.New("model missing") },
	}})
	w := serve(h, "GET", "/readyz", "", "")
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d", w.Code)
	}
	var body struct {
		Status string `json:"status"`
		Checks map[string]struct {
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "unavailable" || !body.Checks["store"].OK || body.Checks["embedder"].OK || body.Checks["embedder"].Detail != "model missing" {
		t.Fatalf("body %+v", body)
	}
	if w := serve(h, "GET", "/healthz", "", ""); w.Code != http.StatusOK {
		t.Fatalf("liveness %d while not ready", w.Code)
	}
}

func TestRateLimitedKeyGets429WithRetryAfter(t *testing.T) {
	t.Parallel()
	lim := fakeLimiter{charged: map[string]int{}}
	h, _ := newTestServer(t, Deps{Limiter: lim})
	w := serve(h, "GET", "/v1/keys", "limited", "")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if e := decodeError(t, w); e.Type != "rate_limit_error" || *e.Code != "rate_limited" {
		t.Fatalf("error %+v", e)
	}
	if w := serve(h, "GET", "/v1/keys", "other", ""); w.Code != http.StatusOK {
		t.Fatalf("another key: %d", w.Code)
	}
	// Public routes are never limited.
	if w := serve(h, "GET", "/healthz", "", ""); w.Code != http.StatusOK {
		t.Fatalf("healthz: %d", w.Code)
	}
}

func TestCapsuleFromHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		suffix, host, want string
	}{
		{"capsules.example.com", "docs.capsules.example.com", "docs"},
		{"capsules.example.com", "DOCS.Capsules.Example.com", "docs"},
		{"capsules.example.com", "docs.capsules.example.com:8443", "docs"},
		{".capsules.example.com", "docs.capsules.example.com", "docs"},
		{"capsules.localhost:8080", "docs.capsules.localhost:8080", "docs"},
		{"capsules.example.com", "capsules.example.com", ""},
		{"capsules.example.com", "a.b.capsules.example.com", ""},
		{"capsules.example.com", "docs.evil.com", ""},
		{"capsules.example.com", "Bad_Name.capsules.example.com", ""},
		{"", "docs.capsules.example.com", ""},
	}
	for _, tt := range tests {
		s := &Server{cfg: Config{CapsuleHostSuffix: tt.suffix}}
		if got := s.capsuleFromHost(tt.host); got != tt.want {
			t.Errorf("suffix %q host %q: %q, want %q", tt.suffix, tt.host, got, tt.want)
		}
	}
}

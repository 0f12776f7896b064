package mcpserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/mcpserver"
)

// fakeAuth accepts "csk_ok" (capsules:read) and fails on "csk_broken" as a
// broken store would; it is a fake for the unit tests of the HTTP gate.
type fakeAuth struct{}

func (fakeAuth) Authenticate(_ context.Context, c string) (*domain.Principal, error) {
	switch c {
	case "csk_ok":
		return &domain.Principal{KeyID: "key_ok", Scopes: []domain.Scope{domain.ScopeCapsulesRead}}, nil
	case "csk_broken":
		return nil, errors.New("database is locked at /secret/path")
	}
	return nil, &domain.Error{Kind: domain.KindUnauthenticated, Code: "invalid_api_key", Message: "invalid credential"}
}

// fakeLimiter refuses every request for 1.5 s.
type fakeLimiter struct{}

func (fakeLimiter) Allow(string) (bool, time.Duration) { return false, 1500 * time.Millisecond }

// fakeCapsules is an empty capsule service.
type fakeCapsules struct{}

func (fakeCapsules) ListCapsules(context.Context) ([]domain.Capsule, error) { return nil, nil }
func (fakeCapsules) ListItems(context.Context, string, domain.ItemStatus, string, int) ([]domain.Item, string, error) {
	return nil, "", nil
}
func (fakeCapsules) GetItem(_ context.Context, _, id string) (domain.Item, error) {
	return domain.Item{}, domain.NotFound("item", id)
}
func (fakeCapsules) ItemText(_ context.Context, _, id string) (domain.Item, string, error) {
	return domain.Item{}, "", domain.NotFound("item", id)
}
func (fakeCapsules) Query(context.Context, string, domain.Query) ([]domain.Hit, error) {
	return nil, nil
}

// TestGateRefusals covers the refusals of the HTTP gate that the real
// server cannot be made to give on demand: a rate-limited key and a failing
// authenticator.
func TestGateRefusals(t *testing.T) {
	for _, c := range []struct {
		name, credential string
		limiter          mcpserver.RateLimiter
		status           int
		want             []string
		retryAfter       string
	}{
		{"over the rate limit", "csk_ok", fakeLimiter{}, 429, []string{`"code":"rate_limited"`, `"type":"rate_limit_error"`}, "2"},
		{"authenticator failure", "csk_broken", nil, 500, []string{"internal error"}, ""},
		{"bad credential", "csk_bad", nil, 401, []string{"invalid_api_key"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(mcpserver.New(mcpserver.Config{}, mcpserver.Deps{Auth: fakeAuth{}, Capsules: fakeCapsules{}, Limiter: c.limiter}).Handler())
			defer srv.Close()
			status, body, hdr := rawPost(t, srv.URL, "Bearer "+c.credential)
			if status != c.status || hdr.Get("Retry-After") != c.retryAfter {
				t.Errorf("status %d, Retry-After %q; want %d, %q (%s)", status, hdr.Get("Retry-After"), c.status, c.retryAfter, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %q lacks %q", body, w)
				}
			}
			if strings.Contains(body, "/secret/path") {
				t.Errorf("the cause leaked: %q", body)
			}
		})
	}
}

package conformance_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCredentialsRequired(t *testing.T) {
	tests := []struct {
		name   string
		header string
		code   string
	}{
		{"missing", "", "missing_credential"},
		{"not bearer", "Basic dXNlcjpwYXNz", "invalid_authorization_header"},
		{"empty bearer", "Bearer ", "invalid_authorization_header"},
		{"unknown key", "Bearer csk_0000000000000000000000000000000000000000000", "invalid_api_key"},
		{"not a capsuled credential", "Bearer sk-123", "invalid_api_key"},
		{"forged token", "Bearer cst_eyJqdGkiOiJ4In0.AAAA", "invalid_api_key"},
		{"huge credential", "Bearer csk_" + strings.Repeat("a", 5000), "invalid_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.header != "" {
				h["Authorization"] = tt.header
			}
			resp := expect(t, do(t, req{method: "GET", path: "/v1/keys", header: h}), http.StatusUnauthorized)
			if e := resp.Err(t); *e.Error.Code != tt.code || e.Error.Type != "authentication_error" {
				t.Fatalf("error %+v, want code %s", e.Error, tt.code)
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestPublicProbes(t *testing.T) {
	expect(t, do(t, req{method: "GET", path: "/healthz"}), http.StatusOK)
	resp := expect(t, do(t, req{method: "GET", path: "/readyz"}), http.StatusOK)
	if !strings.Contains(string(resp.Body), `"store":{"ok":true}`) {
		t.Fatalf("readyz body %s", resp.Body)
	}
	resp = expect(t, do(t, req{method: "GET", path: "/metrics"}), http.StatusOK)
	for _, want := range []string{"capsuled_http_requests_total", "capsuled_http_request_duration_seconds_bucket", `route="getHealth"`} {
		if !strings.Contains(string(resp.Body), want) {
			t.Fatalf("metrics lack %s", want)
		}
	}
	spec := expect(t, do(t, req{method: "GET", path: "/openapi.yaml"}), http.StatusOK)
	if !strings.HasPrefix(string(spec.Body), "openapi: 3.0") {
		t.Fatalf("openapi.yaml starts %.40q", spec.Body)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
}

func TestScopes(t *testing.T) {
	_, chat := newKey(t, map[string]any{"scopes": []string{"chat"}})
	_, reader := newKey(t, map[string]any{"scopes": []string{"capsules:read"}})
	_, memory := newKey(t, map[string]any{"scopes": []string{"memory"}})

	forbidden := []req{
		{method: "GET", path: "/v1/keys", cred: chat},
		{method: "POST", path: "/v1/keys", cred: reader, body: map[string]any{"name": "x", "scopes": []string{"admin"}}},
		{method: "GET", path: "/v1/keys/key_abc", cred: memory},
		{method: "DELETE", path: "/v1/keys/key_abc", cred: chat},
		{method: "POST", path: "/v1/tokens", cred: chat, body: map[string]any{}},
		{method: "POST", path: "/v1/capsules", cred: reader, body: map[string]any{"name": "docs"}},
		{method: "POST", path: "/capsules/docs/query", cred: chat, body: map[string]any{"query": "x"}},
		{method: "POST", path: "/v1/chat/completions", cred: reader, body: map[string]any{"model": "svc-1", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{method: "POST", path: "/v1/memory/chat/completions", cred: chat, body: map[string]any{"model": "x", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	}
	for _, r := range forbidden {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			resp := expect(t, do(t, r), http.StatusForbidden)
			if e := resp.Err(t); *e.Error.Code != "missing_scope" || e.Error.Type != "permission_error" {
				t.Fatalf("error %+v", e.Error)
			}
		})
	}
	// Any valid credential may list models.
	for _, cred := range []string{chat, reader, memory} {
		expect(t, do(t, req{method: "GET", path: "/v1/models", cred: cred}), http.StatusOK)
	}
}

func TestKeyLifecycle(t *testing.T) {
	resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: srv.admin, body: map[string]any{
		"name": "ci", "scopes": []string{"chat", "capsules:read"}, "capsules": []string{"docs"}, "namespaces": []string{"team-a"},
	}}), http.StatusCreated)
	var created struct {
		Key struct {
			ID         string   `json:"id"`
			Prefix     string   `json:"prefix"`
			Scopes     []string `json:"scopes"`
			Capsules   []string `json:"capsules"`
			RevokedAt  *string  `json:"revoked_at"`
			LastUsedAt *string  `json:"last_used_at"`
		} `json:"key"`
		Secret string `json:"secret"`
	}
	resp.JSON(t, &created)
	if !strings.HasPrefix(created.Secret, "csk_") || !strings.HasPrefix(created.Secret, created.Key.Prefix) || created.Key.LastUsedAt != nil {
		t.Fatalf("created %+v", created)
	}

	// The secret is never shown again.
	for _, r := range []req{{method: "GET", path: "/v1/keys"}, {method: "GET", path: "/v1/keys/" + created.Key.ID}} {
		r.cred = srv.admin
		body := expect(t, do(t, r), http.StatusOK).Body
		if strings.Contains(string(body), created.Secret) {
			t.Fatalf("%s shows the secret", r.path)
		}
	}

	// The key works, and its use is recorded.
	expect(t, do(t, req{method: "GET", path: "/v1/models", cred: created.Secret}), http.StatusOK)
	var got struct {
		LastUsedAt *time.Time `json:"last_used_at"`
	}
	expect(t, do(t, req{method: "GET", path: "/v1/keys/" + created.Key.ID, cred: srv.admin}), http.StatusOK).JSON(t, &got)
	if got.LastUsedAt == nil {
		t.Fatal("last_used_at not recorded")
	}

	// Revoked: refused on the next request; revoking again is idempotent.
	expect(t, do(t, req{method: "DELETE", path: "/v1/keys/" + created.Key.ID, cred: srv.admin}), http.StatusOK)
	resp = expect(t, do(t, req{method: "GET", path: "/v1/models", cred: created.Secret}), http.StatusUnauthorized)
	if e := resp.Err(t); *e.Error.Code != "invalid_api_key" {
		t.Fatalf("error %+v", e.Error)
	}
	var revoked struct {
		RevokedAt *time.Time `json:"revoked_at"`
	}
	expect(t, do(t, req{method: "DELETE", path: "/v1/keys/" + created.Key.ID, cred: srv.admin}), http.StatusOK).JSON(t, &revoked)
	if revoked.RevokedAt == nil {
		t.Fatal("revoked_at not set")
	}

	// Unknown keys.
	expect(t, do(t, req{method: "GET", path: "/v1/keys/key_doesnotexist", cred: srv.admin}), http.StatusNotFound)
	expect(t, do(t, req{method: "DELETE", path: "/v1/keys/key_doesnotexist", cred: srv.admin}), http.StatusNotFound)
}

func TestAccessTokens(t *testing.T) {
	keyID, memKey := newKey(t, map[string]any{"scopes": []string{"memory"}, "namespaces": []string{"team-a", "team-b"}})

	// Minting narrows to the requested namespaces, which the key must allow.
	resp := expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: memKey, body: map[string]any{"namespaces": []string{"team-a"}, "ttl_seconds": 120}}), http.StatusCreated)
	var tok struct {
		Token      string   `json:"token"`
		ExpiresIn  int      `json:"expires_in"`
		Namespaces []string `json:"namespaces"`
	}
	resp.JSON(t, &tok)
	if !strings.HasPrefix(tok.Token, "cst_") || tok.ExpiresIn != 120 || len(tok.Namespaces) != 1 {
		t.Fatalf("token %+v", tok)
	}
	resp = expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: memKey, body: map[string]any{"namespaces": []string{"team-c"}}}), http.StatusForbidden)
	if e := resp.Err(t); *e.Error.Code != "namespace_not_allowed" || *e.Error.Param != "namespaces[0]" {
		t.Fatalf("error %+v", e.Error)
	}

	// Without a body: the key's own allow-list and the default hour.
	var def struct {
		ExpiresIn  int      `json:"expires_in"`
		Namespaces []string `json:"namespaces"`
	}
	expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: memKey}), http.StatusCreated).JSON(t, &def)
	if def.ExpiresIn != 3600 || len(def.Namespaces) != 2 {
		t.Fatalf("default token %+v", def)
	}

	// A token may only do memory things, within its namespaces.
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	resp = expect(t, do(t, req{method: "POST", path: "/v1/memory/chat/completions?namespace=team-b", cred: tok.Token, body: map[string]any{"model": "x", "messages": msgs}}), http.StatusForbidden)
	if e := resp.Err(t); *e.Error.Code != "namespace_not_allowed" {
		t.Fatalf("error %+v", e.Error)
	}
	// No namespace means the global one, which this token does not allow.
	expect(t, do(t, req{method: "POST", path: "/v1/memory/chat/completions", cred: tok.Token, body: map[string]any{"model": "x", "messages": msgs}}), http.StatusForbidden)
	expect(t, do(t, req{method: "POST", path: "/v1/chat/completions", cred: tok.Token, body: map[string]any{"model": "svc-1", "messages": msgs}}), http.StatusForbidden)
	expect(t, do(t, req{method: "GET", path: "/v1/keys", cred: tok.Token}), http.StatusForbidden)
	resp = expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: tok.Token}), http.StatusForbidden)
	if e := resp.Err(t); *e.Error.Code != "token_cannot_mint" {
		t.Fatalf("error %+v", e.Error)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/models", cred: tok.Token}), http.StatusOK)

	// A tampered token is refused.
	tampered := tok.Token[:len(tok.Token)-2] + "AA"
	if tampered == tok.Token {
		tampered = tok.Token[:len(tok.Token)-2] + "BB"
	}
	expect(t, do(t, req{method: "GET", path: "/v1/models", cred: tampered}), http.StatusUnauthorized)

	// Expired: refused once its time has passed.
	srv.clock.advance(121 * time.Second)
	t.Cleanup(func() { srv.clock.advance(-121 * time.Second) })
	resp = expect(t, do(t, req{method: "GET", path: "/v1/models", cred: tok.Token}), http.StatusUnauthorized)
	if e := resp.Err(t); *e.Error.Code != "token_expired" {
		t.Fatalf("error %+v", e.Error)
	}

	// Revoking the key kills its tokens.
	_, other := newKey(t, map[string]any{"scopes": []string{"memory"}})
	var tok2 struct {
		Token string `json:"token"`
	}
	expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: other}), http.StatusCreated).JSON(t, &tok2)
	expect(t, do(t, req{method: "GET", path: "/v1/models", cred: tok2.Token}), http.StatusOK)
	expect(t, do(t, req{method: "DELETE", path: "/v1/keys/" + keyID, cred: srv.admin}), http.StatusOK)
	expect(t, do(t, req{method: "GET", path: "/v1/models", cred: tok.Token}), http.StatusUnauthorized)

	// A key without the memory scope cannot mint.
	_, chat := newKey(t, map[string]any{"scopes": []string{"chat"}})
	expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: chat}), http.StatusForbidden)
}

func TestAllowLists(t *testing.T) {
	_, key := newKey(t, map[string]any{"scopes": []string{"capsules:read", "memory"}, "capsules": []string{"docs"}, "namespaces": []string{"team-a"}})
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	cases := []struct {
		r    req
		code string
	}{
		{req{method: "POST", path: "/capsules/other/query", body: map[string]any{"query": "x"}}, "capsule_not_allowed"},
		{req{method: "POST", path: "/query", host: "other.capsules.test", body: map[string]any{"query": "x"}}, "capsule_not_allowed"},
		{req{method: "GET", path: "/v1/capsules/other"}, "capsule_not_allowed"},
		{req{method: "GET", path: "/v1/capsules/other/items"}, "capsule_not_allowed"},
		{req{method: "POST", path: "/v1/memory/chat/completions?namespace=team-b", body: map[string]any{"model": "x", "messages": msgs}}, "namespace_not_allowed"},
		{req{method: "POST", path: "/v1/memory/chat/completions", body: map[string]any{"model": "x", "messages": msgs}}, "namespace_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.r.method+" "+c.r.host+c.r.path, func(t *testing.T) {
			c.r.cred = key
			resp := expect(t, do(t, c.r), http.StatusForbidden)
			if e := resp.Err(t); *e.Error.Code != c.code {
				t.Fatalf("error %+v, want %s", e.Error, c.code)
			}
			if strings.Contains(string(resp.Body), "team-a") {
				t.Fatalf("the error leaks the allow-list: %s", resp.Body)
			}
		})
	}
}

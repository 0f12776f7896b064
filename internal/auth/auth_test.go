package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func setup(t *testing.T) (*Service, *fakeStore, *clock) {
	t.Helper()
	st := newFakeStore()
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	return New(st, c.now, nil), st, c
}

func kindOf(err error) domain.Kind {
	if err == nil {
		return ""
	}
	return domain.KindOf(err)
}

func TestCreateKeyStoresOnlyHash(t *testing.T) {
	t.Parallel()
	svc, st, _ := setup(t)
	k, secret, err := svc.CreateKey(context.Background(), NewKey{Name: "ci", Scopes: []domain.Scope{domain.ScopeChat}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "csk_") || len(secret) != 47 {
		t.Fatalf("secret %q: want csk_ + 43 chars", secret)
	}
	if k.Prefix != secret[:12] {
		t.Fatalf("prefix %q, want %q", k.Prefix, secret[:12])
	}
	for _, stored := range st.keys {
		if strings.Contains(string(stored.Hash), secret) || stored.Prefix == secret {
			t.Fatal("the secret itself was stored")
		}
	}
	p, err := svc.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if p.KeyID != k.ID || !p.Has(domain.ScopeChat) || p.Has(domain.ScopeMemory) {
		t.Fatalf("principal %+v", p)
	}
}

func TestCreateKeyValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    NewKey
		param string
	}{
		{"empty name", NewKey{Name: " ", Scopes: []domain.Scope{domain.ScopeChat}}, "name"},
		{"no scopes", NewKey{Name: "x"}, "scopes"},
		{"bad scope", NewKey{Name: "x", Scopes: []domain.Scope{"root"}}, "scopes[0]"},
		{"bad capsule", NewKey{Name: "x", Scopes: []domain.Scope{domain.ScopeChat}, Capsules: []string{"ok", "Not_OK"}}, "capsules[1]"},
		{"bad namespace", NewKey{Name: "x", Scopes: []domain.Scope{domain.ScopeChat}, Namespaces: []string{"-x"}}, "namespaces[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc, _, _ := setup(t)
			_, _, err := svc.CreateKey(context.Background(), tc.in)
			e, ok := domain.AsError(err)
			if !ok || e.Kind != domain.KindInvalid || e.Param != tc.param {
				t.Fatalf("err %v, want invalid on %s", err, tc.param)
			}
		})
	}
}

func TestAuthenticateRejects(t *testing.T) {
	t.Parallel()
	svc, _, _ := setup(t)
	ctx := context.Background()
	k, secret, err := svc.CreateKey(ctx, NewKey{Name: "x", Scopes: []domain.Scope{domain.ScopeChat}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cred := range []string{"", "nope", "csk_" + strings.Repeat("a", 43), secret + "x", "cst_abc", "cst_a.b", strings.Repeat("x", 5000)} {
		if _, err := svc.Authenticate(ctx, cred); kindOf(err) != domain.KindUnauthenticated {
			t.Errorf("credential %.20q: err %v, want unauthenticated", cred, err)
		}
	}
	if _, err := svc.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, secret); kindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("revoked key: err %v", err)
	}
	if _, err := svc.RevokeKey(ctx, k.ID); err != nil {
		t.Fatalf("revoke is idempotent: %v", err)
	}
	if _, err := svc.RevokeKey(ctx, "key_missing"); kindOf(err) != domain.KindNotFound {
		t.Fatalf("revoke unknown: %v", err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	svc, _, clk := setup(t)
	ctx := context.Background()
	k, secret, err := svc.CreateKey(ctx, NewKey{Name: "m", Scopes: []domain.Scope{domain.ScopeMemory}, Namespaces: []string{"alice", "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}

	tok, info, err := svc.MintToken(ctx, p, []string{"alice"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !info.ExpiresAt.Equal(clk.t.Add(time.Hour)) {
		t.Fatalf("expiry %v", info.ExpiresAt)
	}
	tp, err := svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if !tp.CanNamespace("alice") || tp.CanNamespace("bob") || !tp.Has(domain.ScopeMemory) || tp.Has(domain.ScopeChat) || tp.TokenID == "" {
		t.Fatalf("token principal %+v", tp)
	}

	// Tampering breaks the signature.
	tampered := tok[:len(tok)-2] + "AA"
	if _, err := svc.Authenticate(ctx, tampered); kindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("tampered: %v", err)
	}
	// A token cannot widen the key's allow-list, nor mint tokens.
	if _, _, err := svc.MintToken(ctx, p, []string{"carol"}, 0); kindOf(err) != domain.KindForbidden {
		t.Fatalf("outside allow-list: %v", err)
	}
	if _, _, err := svc.MintToken(ctx, tp, nil, 0); kindOf(err) != domain.KindForbidden {
		t.Fatalf("token minting token: %v", err)
	}
	if _, _, err := svc.MintToken(ctx, p, nil, 10*time.Second); kindOf(err) != domain.KindInvalid {
		t.Fatalf("short ttl: %v", err)
	}
	// Expiry.
	clk.t = clk.t.Add(time.Hour)
	if _, err := svc.Authenticate(ctx, tok); kindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("expired token: %v", err)
	}
	// Revoking the key kills fresh tokens too.
	tok2, _, err := svc.MintToken(ctx, p, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, tok2); kindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("token of revoked key: %v", err)
	}
}

func TestMintNeedsMemoryScope(t *testing.T) {
	t.Parallel()
	svc, _, _ := setup(t)
	ctx := context.Background()
	_, secret, _ := svc.CreateKey(ctx, NewKey{Name: "c", Scopes: []domain.Scope{domain.ScopeChat}})
	p, _ := svc.Authenticate(ctx, secret)
	if _, _, err := svc.MintToken(ctx, p, nil, 0); kindOf(err) != domain.KindForbidden {
		t.Fatalf("chat key minting: %v", err)
	}
}

func TestEnsureAdminKeyOnce(t *testing.T) {
	t.Parallel()
	svc, st, _ := setup(t)
	ctx := context.Background()
	secret, created, err := svc.EnsureAdminKey(ctx)
	if err != nil || !created || secret == "" {
		t.Fatalf("first: %q %v %v", secret, created, err)
	}
	_, created, err = svc.EnsureAdminKey(ctx)
	if err != nil || created {
		t.Fatalf("second: %v %v", created, err)
	}
	if len(st.keys) != 1 || st.keys[0].Scopes[0] != domain.ScopeAdmin {
		t.Fatalf("keys %+v", st.keys)
	}
}

func TestTouchIsThrottled(t *testing.T) {
	t.Parallel()
	svc, st, clk := setup(t)
	ctx := context.Background()
	_, secret, _ := svc.CreateKey(ctx, NewKey{Name: "c", Scopes: []domain.Scope{domain.ScopeChat}})
	for range 5 {
		if _, err := svc.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if st.touched != 1 {
		t.Fatalf("touched %d times, want 1", st.touched)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	_, _ = svc.Authenticate(ctx, secret)
	if st.touched != 2 {
		t.Fatalf("touched %d times after a minute, want 2", st.touched)
	}
}

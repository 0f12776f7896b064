package auth

import (
	"context"
	"testing"

	"capsuled/internal/domain"
)

func TestReaches(t *testing.T) {
	t.Parallel()
	admin := &domain.Principal{Scopes: []domain.Scope{domain.ScopeAdmin}}
	limited := &domain.Principal{Scopes: []domain.Scope{domain.ScopeAdmin}, Capsules: []string{"a"}, Namespaces: []string{"n1"}}
	chat := &domain.Principal{Scopes: []domain.Scope{domain.ScopeChat}}
	key := func(sc []domain.Scope, caps, ns []string) domain.Key {
		return domain.Key{Scopes: sc, Capsules: caps, Namespaces: ns}
	}
	adminScope := []domain.Scope{domain.ScopeAdmin}
	memory := []domain.Scope{domain.ScopeMemory}
	for _, tc := range []struct {
		name string
		p    *domain.Principal
		k    domain.Key
		want bool
	}{
		{"admin reaches an unrestricted admin", admin, key(adminScope, nil, nil), true},
		{"limited does not reach an unrestricted admin", limited, key(adminScope, nil, nil), false},
		{"limited reaches itself", limited, key(adminScope, []string{"a"}, []string{"n1"}), true},
		{"limited does not reach all capsules", limited, key(memory, nil, []string{"n1"}), false},
		{"limited does not reach all namespaces", limited, key(memory, []string{"a"}, nil), false},
		{"limited does not reach another capsule", limited, key(memory, []string{"a", "b"}, []string{"n1"}), false},
		{"chat does not reach memory", chat, key(memory, nil, nil), false},
		{"chat reaches chat", chat, key([]domain.Scope{domain.ScopeChat}, []string{"x"}, nil), true},
		{"nobody reaches nothing", nil, key(memory, nil, nil), false},
	} {
		if got := Reaches(tc.p, tc.k); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestKeyOperationsAs(t *testing.T) {
	t.Parallel()
	svc, _, _ := setup(t)
	ctx := context.Background()
	root, _, err := svc.CreateKey(ctx, NewKey{Name: "root", Scopes: []domain.Scope{domain.ScopeAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	lk, _, err := svc.CreateKey(ctx, NewKey{Name: "limited", Scopes: []domain.Scope{domain.ScopeAdmin}, Capsules: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	limited := PrincipalOf(lk)
	if _, _, err := svc.CreateKeyAs(ctx, limited, NewKey{Name: "wide", Scopes: []domain.Scope{domain.ScopeChat}}); kindOf(err) != domain.KindForbidden {
		t.Fatalf("create wider: %v", err)
	}
	if _, err := svc.RevokeKeyAs(ctx, limited, root.ID); kindOf(err) != domain.KindForbidden {
		t.Fatalf("revoke wider: %v", err)
	}
	if _, err := svc.GetKeyAs(ctx, limited, "key_missing"); kindOf(err) != domain.KindNotFound {
		t.Fatalf("get unknown: %v", err)
	}
	keys, err := svc.ListKeysAs(ctx, limited)
	if err != nil || len(keys) != 1 || keys[0].ID != lk.ID {
		t.Fatalf("list: %+v %v", keys, err)
	}
	if _, err := svc.RevokeKeyAs(ctx, PrincipalOf(root), lk.ID); err != nil {
		t.Fatalf("the unrestricted admin revokes: %v", err)
	}
}

package storetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// AuthStore runs the auth.Store suite against fresh stores made by newStore.
func AuthStore(t *testing.T, newStore func(t *testing.T) auth.Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	key := func(id string, hash byte, created time.Time) domain.Key {
		return domain.Key{
			ID: id, Name: "name " + id, Prefix: "csk_" + id, Hash: bytes.Repeat([]byte{hash}, 32),
			Scopes:     []domain.Scope{domain.ScopeChat, domain.ScopeCapsulesRead},
			Capsules:   []string{"docs"},
			Namespaces: []string{"team:a", "global"},
			CreatedAt:  created,
		}
	}

	t.Run("CreateAndGet", func(t *testing.T) {
		st := newStore(t)
		k := key("key_a", 1, t0)
		if err := st.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		for name, get := range map[string]func() (domain.Key, error){
			"GetKey":    func() (domain.Key, error) { return st.GetKey(ctx, "key_a") },
			"KeyByHash": func() (domain.Key, error) { return st.KeyByHash(ctx, k.Hash) },
		} {
			got, err := get()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got.ID != k.ID || got.Name != k.Name || got.Prefix != k.Prefix || !bytes.Equal(got.Hash, k.Hash) ||
				!got.CreatedAt.Equal(k.CreatedAt) || got.LastUsedAt != nil || got.RevokedAt != nil {
				t.Fatalf("%s: got %+v, want %+v", name, got, k)
			}
			if len(got.Scopes) != 2 || got.Scopes[0] != domain.ScopeChat || len(got.Capsules) != 1 || len(got.Namespaces) != 2 {
				t.Fatalf("%s: lists not kept: %+v", name, got)
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		st := newStore(t)
		if _, err := st.GetKey(ctx, "key_missing"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("GetKey: %v, want ErrNotFound", err)
		}
		if _, err := st.KeyByHash(ctx, []byte("nope")); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("KeyByHash: %v, want ErrNotFound", err)
		}
		if _, err := st.RevokeKey(ctx, "key_missing", t0); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("RevokeKey: %v, want ErrNotFound", err)
		}
	})

	t.Run("DuplicateIsConflict", func(t *testing.T) {
		st := newStore(t)
		if err := st.CreateKey(ctx, key("key_a", 1, t0)); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateKey(ctx, key("key_a", 2, t0)); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("same id: %v, want ErrConflict", err)
		}
	})

	t.Run("ListNewestFirstAndCount", func(t *testing.T) {
		st := newStore(t)
		for i, id := range []string{"key_old", "key_new", "key_mid"} {
			created := []time.Time{t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)}[i]
			if err := st.CreateKey(ctx, key(id, byte(i+1), created)); err != nil {
				t.Fatal(err)
			}
		}
		keys, err := st.ListKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range keys {
			ids = append(ids, k.ID)
		}
		if len(ids) != 3 || ids[0] != "key_new" || ids[1] != "key_mid" || ids[2] != "key_old" {
			t.Fatalf("order %v", ids)
		}
		if n, err := st.CountKeys(ctx); err != nil || n != 3 {
			t.Fatalf("CountKeys = %d, %v", n, err)
		}
	})

	t.Run("RevokeKeepsFirstTime", func(t *testing.T) {
		st := newStore(t)
		if err := st.CreateKey(ctx, key("key_a", 1, t0)); err != nil {
			t.Fatal(err)
		}
		k, err := st.RevokeKey(ctx, "key_a", t0.Add(time.Minute))
		if err != nil || k.RevokedAt == nil || !k.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("revoke: %+v, %v", k, err)
		}
		k, err = st.RevokeKey(ctx, "key_a", t0.Add(time.Hour))
		if err != nil || !k.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("second revoke changed the time: %+v, %v", k, err)
		}
		got, _ := st.KeyByHash(ctx, k.Hash)
		if got.RevokedAt == nil {
			t.Fatal("revocation not visible through KeyByHash")
		}
	})

	t.Run("Touch", func(t *testing.T) {
		st := newStore(t)
		if err := st.CreateKey(ctx, key("key_a", 1, t0)); err != nil {
			t.Fatal(err)
		}
		if err := st.TouchKey(ctx, "key_a", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		got, _ := st.GetKey(ctx, "key_a")
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("last used %v", got.LastUsedAt)
		}
	})

	t.Run("SecretCreatedOnce", func(t *testing.T) {
		st := newStore(t)
		var wg sync.WaitGroup
		got := make([][]byte, 8)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := st.Secret(ctx, "signing", func() ([]byte, error) { return []byte{byte(i + 1), 2, 3}, nil })
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			}()
		}
		wg.Wait()
		for _, v := range got[1:] {
			if !bytes.Equal(v, got[0]) {
				t.Fatalf("concurrent first calls disagree: %v vs %v", v, got[0])
			}
		}
		again, err := st.Secret(ctx, "signing", func() ([]byte, error) { return nil, errors.New("must not be called") })
		if err != nil || !bytes.Equal(again, got[0]) {
			t.Fatalf("second call: %v, %v", again, err)
		}
	})
}

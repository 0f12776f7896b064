package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"capsuled/internal/app"
)

// server is a running capsuled.
type server struct {
	url   string
	admin string
	app   *app.App
}

func startServer(t *testing.T) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("CAPSULED_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	a, err := app.New(ctx, app.Config{DataDir: t.TempDir(), Version: "browsertest"}, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	secret, _, err := a.Auth().EnsureAdminKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		a.Close()
	})
	return &server{url: "http://" + l.Addr().String(), admin: secret, app: a}
}

// chromium returns the browser binary, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CAPSULED_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CAPSULED_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Skip("no Chromium: install Debian's chromium (apt-get install -y chromium) or set CAPSULED_CHROMIUM to run the browser tests")
	return ""
}

// browser starts a headless Chromium and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// Start the browser on a context without a deadline (it lives as long as
	// this first call's context).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// step runs browser actions with a time limit.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s: %v\npage main:\n%s", what, err, html)
	}
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// waitLocation waits until the page's URL contains substr.
func waitLocation(t *testing.T, ctx context.Context, substr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err == nil && strings.Contains(loc, substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not reach a URL with %q (at %q, %v)", substr, loc, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CAPSULED_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// The viewports every page is checked and photographed at.
var viewports = []struct {
	name          string
	width, height int64
}{{"desktop", 1280, 900}, {"phone", 390, 844}}

// auditJS lists basic accessibility problems of the page: inputs without a
// label, not exactly one h1, headings that skip a level, unnamed controls,
// and content wider than the viewport.
const auditJS = `(() => {
  const p = [];
  document.querySelectorAll('input, select, textarea').forEach(el => {
    if (el.type === 'hidden') return;
    if (!(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
      p.push('input without a label: ' + (el.id || el.name));
  });
  const hs = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => +h.tagName[1]);
  const h1 = hs.filter(l => l === 1).length;
  if (h1 !== 1) p.push('want one h1, have ' + h1);
  let prev = 0;
  hs.forEach(l => { if (l > prev + 1) p.push('heading jumps from h' + prev + ' to h' + l); prev = l; });
  document.querySelectorAll('a, button').forEach(el => {
    if (!el.textContent.trim() && !el.getAttribute('aria-label')) p.push('control without a name: ' + el.outerHTML.slice(0, 80));
  });
  if (!document.documentElement.lang) p.push('no lang on html');
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    p.push('wider than the viewport: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  return p;
})()`

// keyboardJS reports what has keyboard focus and whether it is outlined.
const keyboardJS = `(() => {
  const el = document.activeElement;
  const s = getComputedStyle(el);
  return (el.className || el.tagName) + '|' + s.outlineStyle + '|' + s.outlineWidth;
})()`

// checkPage audits the current page at every viewport and saves screenshots.
func checkPage(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	for _, vp := range viewports {
		step(t, ctx, "viewport "+vp.name, chromedp.EmulateViewport(vp.width, vp.height))
		if problems := run(t, ctx, "audit "+name, chromedp.Evaluate[[]string](auditJS)); len(problems) > 0 {
			t.Errorf("%s at %s width: %s", name, vp.name, strings.Join(problems, "; "))
		}
		png := run(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s.png", name, vp.name)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	step(t, ctx, "viewport back", chromedp.EmulateViewport(1280, 900))
}

// apiStatus calls GET /v1/models with key and returns the status.
func apiStatus(t *testing.T, s *server, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func signIn(t *testing.T, ctx context.Context, s *server, dir string) {
	t.Helper()
	step(t, ctx, "open the dashboard",
		chromedp.Navigate(s.url+"/dashboard/"),
		chromedp.WaitVisible(chromedp.ID("key")),
	)
	if loc := run(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "/dashboard/signin") {
		t.Fatalf("an unsigned visitor is at %s, want the sign-in page", loc)
	}
	if dir != "" {
		checkPage(t, ctx, dir, "signin")
	}
	step(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.ID("key"), s.admin),
		chromedp.KeyEvent("\r"), // submit with the keyboard
		chromedp.WaitVisible(chromedp.CSS(`nav a[aria-current="page"]`)),
	)
	// Keyboard: on a fresh page the first Tab reaches the skip link, which
	// shows its focus, and Enter on it moves focus to the main content.
	step(t, ctx, "tab",
		chromedp.Navigate(s.url+"/dashboard/status"),
		chromedp.WaitVisible(chromedp.CSS("main h1")),
		chromedp.KeyEvent("\t"),
	)
	if f := run(t, ctx, "focus", chromedp.Evaluate[string](keyboardJS)); !strings.HasPrefix(f, "skip|solid") {
		t.Errorf("after one Tab the focus is %q, want the skip link with a visible outline", f)
	}
	step(t, ctx, "enter", chromedp.KeyEvent("\r"))
	if f := run(t, ctx, "focus", chromedp.Evaluate[string]("document.activeElement.id")); f != "main" {
		t.Errorf("the skip link moved focus to %q, want main", f)
	}
}

func TestKeyLifecycleInTheBrowser(t *testing.T) {
	s := startServer(t)
	ctx := browser(t)
	dir := screenshotDir(t)
	signIn(t, ctx, s, dir)
	checkPage(t, ctx, dir, "status")

	// Create a key with the chat scope.
	step(t, ctx, "create a key",
		chromedp.Navigate(s.url+"/dashboard/keys"),
		chromedp.WaitVisible(chromedp.ID("key-name")),
		chromedp.SendKeys(chromedp.ID("key-name"), "browser-key"),
		chromedp.Click(chromedp.ID("scope-chat")),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("new-secret")),
	)
	secret := run(t, ctx, "read the key", chromedp.Value(chromedp.ID("new-secret")))
	if !strings.HasPrefix(secret, "csk_") {
		t.Fatalf("the page shows %q as the new key", secret)
	}
	warning := run(t, ctx, "warning", chromedp.Text(chromedp.CSS(".secret .warning")))
	if !strings.Contains(warning, "will not be shown again") {
		t.Errorf("no shown-once warning: %q", warning)
	}
	step(t, ctx, "copy", chromedp.Click(chromedp.CSS(`button[data-copy="new-secret"]`)))
	copied := run(t, ctx, "copy status", chromedp.Poll[string](`document.querySelector('.secret .copy-status').textContent || false`))
	if copied == "" {
		t.Error("the copy button said nothing")
	}
	checkPage(t, ctx, dir, "key-created")

	if got := apiStatus(t, s, secret); got != http.StatusOK {
		t.Fatalf("the new key on the API: %d, want 200", got)
	}

	// Reload the list: the secret is gone, the key is listed with its prefix.
	step(t, ctx, "list keys",
		chromedp.Navigate(s.url+"/dashboard/keys"),
		chromedp.WaitVisible(chromedp.CSS(`a[aria-label="Revoke the key browser-key"]`)),
	)
	body := run(t, ctx, "page", chromedp.OuterHTML(chromedp.CSS("body")))
	if strings.Contains(body, secret) {
		t.Fatal("the keys page shows the secret again")
	}
	if !strings.Contains(body, secret[:12]) {
		t.Errorf("the keys page does not show the prefix %s", secret[:12])
	}
	checkPage(t, ctx, dir, "keys")

	// Revoke it, through the confirmation page.
	step(t, ctx, "revoke",
		chromedp.Click(chromedp.CSS(`a[aria-label="Revoke the key browser-key"]`)),
		chromedp.WaitVisible(chromedp.ID("confirm-heading")),
	)
	checkPage(t, ctx, dir, "revoke-confirm")
	step(t, ctx, "confirm",
		chromedp.Click(chromedp.CSS(`main form button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	)
	notice := run(t, ctx, "notice", chromedp.Text(chromedp.CSS("p.notice")))
	if !strings.Contains(notice, "revoked") {
		t.Errorf("notice after revoking: %q", notice)
	}
	if got := apiStatus(t, s, secret); got != http.StatusUnauthorized {
		t.Fatalf("the revoked key on the API: %d, want 401", got)
	}

	// An access token for a memory key.
	step(t, ctx, "create a memory key",
		chromedp.Navigate(s.url+"/dashboard/keys"),
		chromedp.WaitVisible(chromedp.ID("key-name")),
		chromedp.SendKeys(chromedp.ID("key-name"), "memory-key"),
		chromedp.Click(chromedp.ID("scope-memory")),
		chromedp.SendKeys(chromedp.ID("key-namespaces"), "alice, bob"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("new-secret")),
		chromedp.Navigate(s.url+"/dashboard/keys"),
		chromedp.WaitVisible(chromedp.ID("token-key")),
		chromedp.SendKeys(chromedp.ID("token-namespaces"), "alice"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/tokens"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("new-token")),
	)
	token := run(t, ctx, "read the token", chromedp.Value(chromedp.ID("new-token")))
	if !strings.HasPrefix(token, "cst_") {
		t.Fatalf("the page shows %q as the token", token)
	}
	if got := apiStatus(t, s, token); got != http.StatusOK {
		t.Fatalf("the access token on the API: %d, want 200", got)
	}
	checkPage(t, ctx, dir, "token-minted")

	// The other pages, for the audit and the screenshots.
	for _, p := range []string{"capsules", "playground", "namespaces"} {
		step(t, ctx, "open "+p, chromedp.Navigate(s.url+"/dashboard/"+p), chromedp.WaitVisible(chromedp.CSS("main h1")))
		checkPage(t, ctx, dir, p)
	}

	// Sign out.
	step(t, ctx, "sign out",
		chromedp.Click(chromedp.CSS(`form.signout button`)),
		chromedp.WaitVisible(chromedp.ID("key")),
	)
	step(t, ctx, "keys after sign-out", chromedp.Navigate(s.url+"/dashboard/keys"), chromedp.WaitVisible(chromedp.ID("key")))
}

func TestNonAdminKeyIsRefusedInTheBrowser(t *testing.T) {
	s := startServer(t)
	ctx := browser(t)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/keys", strings.NewReader(`{"name":"reader","scopes":["capsules:read"]}`))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct {
		Secret string `json:"secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create a reader key: %d %v", resp.StatusCode, err)
	}
	reader := created.Secret
	step(t, ctx, "sign in as a reader",
		chromedp.Navigate(s.url+"/dashboard/signin"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), reader),
		chromedp.Click(chromedp.CSS(`main button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.error`)),
	)
	msg := run(t, ctx, "error", chromedp.Text(chromedp.CSS("p.error")))
	if !strings.Contains(msg, "does not have the admin scope") {
		t.Fatalf("refusal message: %q", msg)
	}
}

// api sends a JSON request with the admin key and returns the status.
func (s *server) api(t *testing.T, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// skipUnavailable skips when the current page says its service is missing.
func skipUnavailable(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	if body := run(t, ctx, "page", chromedp.OuterHTML(chromedp.CSS("main"))); strings.Contains(body, "not available on this server") {
		t.Skipf("%s: the server runs without the service", what)
	}
}

func TestUploadAndQueryInTheBrowser(t *testing.T) {
	s := startServer(t)
	ctx := browser(t)
	dir := screenshotDir(t)
	signIn(t, ctx, s, "")
	step(t, ctx, "capsules", chromedp.Navigate(s.url+"/dashboard/capsules"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	skipUnavailable(t, ctx, "capsules")

	step(t, ctx, "create a capsule",
		chromedp.SendKeys(chromedp.ID("capsule-name"), "handbook"),
		chromedp.SendKeys(chromedp.ID("capsule-description"), "the staff handbook"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/capsules"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("upload-files")),
	)
	file := filepath.Join(t.TempDir(), "holidays.md")
	text := "# Holidays\n\nEvery employee gets twenty-eight days of paid leave a year. " +
		"Unused leave carries over until the end of March.\n\n## Parental leave\n\nParents get sixteen weeks at full pay.\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// File names of the usual shape, and one long name without a separator:
	// in the item table at desktop width each stays on one line (no break
	// inside a word), and the long one wraps inside the table.
	names := []string{"quarterly-planning_notes.md", "expenses.txt",
		"Travelpolicyforallemployeesandcontractorsworldwide2026editionapprovedbytheboardinitsmeetingofmarch.txt"}
	files := []string{file}
	for _, n := range names {
		f := filepath.Join(t.TempDir(), n)
		if err := os.WriteFile(f, []byte("Notes about "+n+" for the staff handbook.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// A file that fails (not a real DOCX): its row has a long MIME type and
	// a failure reason, which squeeze the other columns.
	bad := filepath.Join(t.TempDir(), "budget-2026.docx")
	if err := os.WriteFile(bad, []byte("PK\x03\x04 not really a zip archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, bad)
	step(t, ctx, "upload",
		chromedp.SetUploadFiles(chromedp.ID("upload-files"), files),
		chromedp.Click(chromedp.CSS(`form[data-upload] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-item-id]`)),
	)
	// Wait until ingestion is done (reloading, as a person would).
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := run(t, ctx, "status", chromedp.Evaluate[string](`(() => {
			const s = [...document.querySelectorAll('tr[data-item-id] .status')].map(e => e.textContent);
			if (s.length < 5) return 'missing';
			if (s.filter(x => x === 'failed').length > 1) return 'failed';
			return s.find(x => x !== 'ready' && x !== 'failed') || 'ready';
		})()`))
		if st == "ready" {
			break
		}
		if st == "failed" || time.Now().After(deadline) {
			row := run(t, ctx, "row", chromedp.Text(chromedp.CSS(`tr[data-item-id]`)))
			t.Fatalf("the item is %s: %s", st, row)
		}
		step(t, ctx, "reload", chromedp.Sleep(300*time.Millisecond), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`tr[data-item-id]`)))
	}
	checkPage(t, ctx, dir, "capsule")
	// Where each item's name wraps in the table at a laptop's width: the
	// number of lines it takes, and every break inside a word: a line that
	// starts inside a text node (the <wbr> that breakable puts after
	// separators and into long runs split the name into nodes) after a
	// character other than white space.
	step(t, ctx, "laptop width", chromedp.EmulateViewport(1024, 768))
	layout := run(t, ctx, "name layout", chromedp.Evaluate[map[string]any](`(() => {
		const out = {lines: {}, midword: [], overflow: false};
		for (const td of document.querySelectorAll('tr[data-item-id] td[data-label="Item"]')) {
			const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
			let top = null, prev = '', lines = 0;
			for (let n = walker.nextNode(); n; n = walker.nextNode()) {
				for (let i = 0; i < n.data.length; i++) {
					const r = document.createRange();
					r.setStart(n, i); r.setEnd(n, i + 1);
					const t = Math.round(r.getBoundingClientRect().top);
					if (top === null || t > top + 2) {
						lines++;
						if (top !== null && i > 0 && !/\s/.test(prev)) out.midword.push(td.textContent + ' before ' + n.data.slice(i, i + 8));
						top = t;
					}
					prev = n.data[i];
				}
			}
			out.lines[td.textContent] = lines;
		}
		const table = document.querySelector('tr[data-item-id]').closest('table');
		out.overflow = table.scrollWidth > table.parentElement.clientWidth + 1;
		return out;
	})()`))
	if mid, _ := layout["midword"].([]any); len(mid) > 0 {
		t.Errorf("file names break inside words: %v", mid)
	}
	lines, _ := layout["lines"].(map[string]any)
	for _, n := range append([]string{"holidays.md", "budget-2026.docx"}, names[:2]...) {
		if l, _ := lines[n].(float64); l != 1 {
			t.Errorf("file name %s takes %v lines in the item table at 1024px, want 1 (%v)", n, lines[n], layout)
		}
	}
	if layout["overflow"] != false {
		t.Errorf("the item table overflows its section (%v)", layout)
	}
	step(t, ctx, "viewport back", chromedp.EmulateViewport(1280, 900))

	step(t, ctx, "query",
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/playground?capsule=handbook"]`)),
		chromedp.WaitVisible(chromedp.ID("pg-query")),
		chromedp.SendKeys(chromedp.ID("pg-query"), "how many days of paid leave"),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("results-heading")),
	)
	first := run(t, ctx, "first hit", chromedp.Text(chromedp.CSS(`.hits li:first-child`)))
	if !strings.Contains(first, "holidays.md") || !strings.Contains(first, "twenty-eight days") {
		t.Fatalf("the first result is %q, want the holidays file", first)
	}
	curl := run(t, ctx, "curl", chromedp.Text(chromedp.ID("curl")))
	if !strings.Contains(curl, s.url+"/capsules/handbook/query") || !strings.Contains(curl, `"query":"how many days of paid leave"`) {
		t.Errorf("curl command: %s", curl)
	}
	checkPage(t, ctx, dir, "playground-results")
	step(t, ctx, "capsule list", chromedp.Navigate(s.url+"/dashboard/capsules"), chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/capsules/handbook"]`)))
	checkPage(t, ctx, dir, "capsules-list")
}

func TestDeleteNamespaceInTheBrowser(t *testing.T) {
	s := startServer(t)
	ctx := browser(t)
	dir := screenshotDir(t)
	signIn(t, ctx, s, "")
	step(t, ctx, "namespaces", chromedp.Navigate(s.url+"/dashboard/namespaces"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	skipUnavailable(t, ctx, "memory")
	for ns, notes := range map[string][]string{
		"alice": {"Alice prefers green tea.", "Alice moved to Lyon in 2025."},
		"bob":   {"Bob is allergic to peanuts."},
	} {
		for _, n := range notes {
			if got := s.api(t, http.MethodPost, "/v1/memory/namespaces/"+ns+"/memories", `{"content":"`+n+`"}`); got != http.StatusCreated {
				t.Fatalf("add a memory to %s: %d", ns, got)
			}
		}
	}
	step(t, ctx, "list", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/namespaces/alice"]`)))
	checkPage(t, ctx, dir, "namespaces-list")
	step(t, ctx, "browse",
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/namespaces/alice"]`)),
		chromedp.WaitVisible(chromedp.ID("mem-search")),
		chromedp.SendKeys(chromedp.ID("mem-search"), "Lyon"),
		chromedp.KeyEvent("\r"),
	)
	// Enter submits the search form: wait for the result page itself, not a
	// table of the page being left (reading that one races the navigation).
	waitLocation(t, ctx, "q=Lyon")
	step(t, ctx, "search results", chromedp.WaitVisible(chromedp.CSS(`main table`)))
	found := run(t, ctx, "memories", chromedp.Text(chromedp.CSS(`main table tbody`)))
	if !strings.Contains(found, "Lyon") || strings.Contains(found, "green tea") {
		t.Errorf("search for Lyon shows %q", found)
	}
	checkPage(t, ctx, dir, "namespace")
	step(t, ctx, "delete",
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/namespaces/alice/delete"]`)),
		chromedp.WaitVisible(chromedp.ID("confirm-heading")),
		chromedp.Click(chromedp.CSS(`main form button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	)
	body := run(t, ctx, "list", chromedp.OuterHTML(chromedp.CSS("main")))
	if strings.Contains(body, `/dashboard/namespaces/alice"`) || !strings.Contains(body, `/dashboard/namespaces/bob"`) {
		t.Fatalf("after deleting alice the list is:\n%s", body)
	}
	if got := s.api(t, http.MethodGet, "/v1/memory/namespaces/alice", ""); got != http.StatusNotFound {
		t.Fatalf("the deleted namespace on the API: %d, want 404", got)
	}
}

package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/internal/dashboard"
	"capsuled/internal/domain"
)

func TestKeyPagesCreateRevokeAndMint(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	ctx := context.Background()

	tok := csrf(t, br.get("/dashboard/keys"))
	p := br.post("/dashboard/keys", url.Values{"csrf_token": {tok}, "name": {"mem"}, "scopes": {"memory", "chat"}, "namespaces": {"alice, bob"}})
	if p.status != http.StatusCreated || !strings.Contains(p.body, "will not be shown again") {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	m := regexpSecret.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatal("the new key is not on the page")
	}
	secret := m[1]
	pr, err := b.auth.Authenticate(ctx, secret)
	if err != nil || !slices.Equal(pr.Namespaces, []string{"alice", "bob"}) || !pr.Has(domain.ScopeMemory) {
		t.Fatalf("the created key: %+v, %v", pr, err)
	}
	if strings.Contains(br.get("/dashboard/keys").body, secret) {
		t.Fatal("the key is shown a second time")
	}

	// Mint a token narrowed to alice.
	p = br.post("/dashboard/tokens", url.Values{"csrf_token": {tok}, "key": {pr.KeyID}, "ttl_seconds": {"900"}, "namespaces": {"alice"}})
	mt := regexpToken.FindStringSubmatch(p.body)
	if p.status != http.StatusCreated || mt == nil {
		t.Fatalf("mint: %d\n%s", p.status, p.body)
	}
	tp, err := b.auth.Authenticate(ctx, mt[1])
	if err != nil || tp.TokenID == "" || !slices.Equal(tp.Namespaces, []string{"alice"}) {
		t.Fatalf("the minted token: %+v, %v", tp, err)
	}

	// Validation errors keep the form and name the field.
	for _, tc := range []struct {
		name   string
		form   url.Values
		path   string
		status int
		want   string
	}{
		{"no scopes", url.Values{"name": {"x"}}, "/dashboard/keys", http.StatusBadRequest, "at least one scope"},
		{"bad scope", url.Values{"name": {"x"}, "scopes": {"root"}}, "/dashboard/keys", http.StatusBadRequest, "unknown scope"},
		{"bad capsule", url.Values{"name": {"x"}, "scopes": {"chat"}, "capsules": {"Not A Label"}}, "/dashboard/keys", http.StatusBadRequest, "capsules[0]"},
		{"no name", url.Values{"scopes": {"chat"}}, "/dashboard/keys", http.StatusBadRequest, "name"},
		{"token for a chat key", url.Values{"key": {b.keyID(t, "root")}, "ttl_seconds": {"0"}}, "/dashboard/tokens", http.StatusBadRequest, "ttl_seconds"},
		{"token namespace outside", url.Values{"key": {pr.KeyID}, "ttl_seconds": {"900"}, "namespaces": {"carol"}}, "/dashboard/tokens", http.StatusForbidden, "may not use namespace"},
		{"token for unknown key", url.Values{"key": {"key_nope"}, "ttl_seconds": {"900"}}, "/dashboard/tokens", http.StatusNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf_token", tok)
			p := br.post(tc.path, tc.form)
			if p.status != tc.status || !strings.Contains(p.body, tc.want) {
				t.Fatalf("status %d, want %d with %q", p.status, tc.status, tc.want)
			}
		})
	}
	if p := br.post("/dashboard/keys", url.Values{"csrf_token": {tok}, "name": {"keep me"}}); !strings.Contains(p.body, `value="keep me"`) {
		t.Error("a refused form loses what was typed")
	}

	// Revoke through the confirmation page.
	if p := br.get("/dashboard/keys/" + pr.KeyID + "/revoke"); p.status != http.StatusOK || !strings.Contains(p.body, "Revoke the key “mem”?") {
		t.Fatalf("confirm page: %d", p.status)
	}
	p = br.post("/dashboard/keys/"+pr.KeyID+"/revoke", url.Values{"csrf_token": {tok}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/dashboard/keys?notice=key-revoked" {
		t.Fatalf("revoke: %d to %q", p.status, p.header.Get("Location"))
	}
	if _, err := b.auth.Authenticate(ctx, secret); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("the revoked key still authenticates: %v", err)
	}
	if _, err := b.auth.Authenticate(ctx, mt[1]); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("a token of the revoked key still authenticates: %v", err)
	}
	if p := br.get("/dashboard/keys?notice=key-revoked"); !strings.Contains(p.body, "was revoked") {
		t.Error("no notice after revoking")
	}
	if p := br.get("/dashboard/keys?notice=%3Cscript%3E"); strings.Contains(p.body, "<script>") {
		t.Error("the notice echoes the URL")
	}
}

func TestRevokingTheSessionKeyEndsTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	if _, err := b.auth.RevokeKey(context.Background(), b.keyID(t, "root")); err != nil {
		t.Fatal(err)
	}
	if p := br.get("/dashboard/keys"); p.status != http.StatusSeeOther {
		t.Fatalf("after the key was revoked elsewhere: %d", p.status)
	}
}

func TestRevokingYourOwnKeySignsYouOut(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	id := b.keyID(t, "root")
	tok := csrf(t, br.get("/dashboard/keys"))
	p := br.post("/dashboard/keys/"+id+"/revoke", url.Values{"csrf_token": {tok}})
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/dashboard/signin") {
		t.Fatalf("%d to %q", p.status, p.header.Get("Location"))
	}
}

func (b *bundle) keyID(t *testing.T, name string) string {
	t.Helper()
	keys, err := b.auth.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == name {
			return k.ID
		}
	}
	t.Fatalf("no key %q", name)
	return ""
}

func TestUnavailableServices(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	br.mustSignIn()
	for path, want := range map[string]string{
		"/dashboard/capsules":                 "Capsules are not available on this server.",
		"/dashboard/capsules/docs":            "Capsules are not available on this server.",
		"/dashboard/playground?capsule=x&q=y": "Capsules are not available on this server.",
		"/dashboard/namespaces":               "Memory is not available on this server.",
		"/dashboard/namespaces/global":        "Memory is not available on this server.",
	} {
		if p := br.get(path); p.status != http.StatusOK || !strings.Contains(p.body, want) {
			t.Errorf("%s: %d, want %q", path, p.status, want)
		}
	}
	if p := br.get("/dashboard/status"); p.status != http.StatusOK || !strings.Contains(p.body, "Active API keys") {
		t.Errorf("status page: %d", p.status)
	}
}

// fakeCapsules is an in-memory Capsules for the page tests.
type fakeCapsules struct {
	mu       sync.Mutex
	capsules map[string]*domain.Capsule
	items    map[string][]domain.Item
	bodies   map[string]string
	queries  []domain.Query
}

func newFakeCapsules() *fakeCapsules {
	return &fakeCapsules{capsules: map[string]*domain.Capsule{}, items: map[string][]domain.Item{}, bodies: map[string]string{}}
}

func (f *fakeCapsules) ListCapsules(context.Context) ([]domain.Capsule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Capsule
	for _, c := range f.capsules {
		cc := *c
		cc.ItemCount = len(f.items[c.Name])
		out = append(out, cc)
	}
	slices.SortFunc(out, func(a, b domain.Capsule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *fakeCapsules) CreateCapsule(_ context.Context, name, desc string) (domain.Capsule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.capsules[name]; ok {
		return domain.Capsule{}, &domain.Error{Kind: domain.KindConflict, Message: fmt.Sprintf("capsule %q exists", name)}
	}
	f.capsules[name] = &domain.Capsule{Name: name, Description: desc, CreatedAt: time.Now()}
	return *f.capsules[name], nil
}

func (f *fakeCapsules) DeleteCapsule(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.capsules[name]; !ok {
		return domain.NotFound("capsule", name)
	}
	delete(f.capsules, name)
	delete(f.items, name)
	return nil
}

func (f *fakeCapsules) ListItems(_ context.Context, capsule string) ([]domain.Item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.capsules[capsule]; !ok {
		return nil, domain.NotFound("capsule", capsule)
	}
	return slices.Clone(f.items[capsule]), nil
}

func (f *fakeCapsules) AddFile(_ context.Context, capsule string, u dashboard.Upload) (domain.Item, error) {
	body, err := io.ReadAll(u.Body)
	if err != nil {
		return domain.Item{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.capsules[capsule]; !ok {
		return domain.Item{}, domain.NotFound("capsule", capsule)
	}
	it := domain.Item{ID: fmt.Sprintf("itm_%d", len(f.bodies)+1), Capsule: capsule, Kind: domain.ItemFile, FileName: u.FileName,
		FileType: u.FileType, Size: int64(len(body)), Status: domain.StatusReady, TimeAdded: time.Now(), ChunkCount: 1}
	f.items[capsule] = append(f.items[capsule], it)
	f.bodies[it.ID] = string(body)
	return it, nil
}

func (f *fakeCapsules) DeleteItem(_ context.Context, capsule, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.items[capsule])
	f.items[capsule] = slices.DeleteFunc(f.items[capsule], func(it domain.Item) bool { return it.ID == id })
	if len(f.items[capsule]) == n {
		return domain.NotFound("item", id)
	}
	return nil
}

// Query returns every item whose body contains the query text.
func (f *fakeCapsules) Query(_ context.Context, capsule string, q domain.Query) ([]domain.Hit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.capsules[capsule]; !ok {
		return nil, domain.NotFound("capsule", capsule)
	}
	f.queries = append(f.queries, q)
	var hits []domain.Hit
	for _, it := range f.items[capsule] {
		if strings.Contains(f.bodies[it.ID], q.Text) {
			hits = append(hits, domain.Hit{Item: it, Content: f.bodies[it.ID], Score: 0.875})
		}
	}
	return hits, nil
}

func upload(t *testing.T, br *browser, path, tok string, files map[string]string) page {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("csrf_token", tok)
	for name, body := range files {
		w, _ := mw.CreateFormFile("files", name)
		_, _ = w.Write([]byte(body))
	}
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, br.b.srv.URL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", br.origin)
	return br.do(req)
}

func TestCapsulePages(t *testing.T) {
	t.Parallel()
	fc := newFakeCapsules()
	b := setup(t, options{capsules: fc})
	br := b.browser(t)
	br.mustSignIn()
	tok := csrf(t, br.get("/dashboard/capsules"))

	if p := br.post("/dashboard/capsules", url.Values{"csrf_token": {tok}, "name": {"Bad Name"}}); p.status != http.StatusBadRequest || !strings.Contains(p.body, "DNS label") {
		t.Fatalf("bad name: %d", p.status)
	}
	p := br.post("/dashboard/capsules", url.Values{"csrf_token": {tok}, "name": {"docs"}, "description": {"the manual"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/dashboard/capsules/docs?notice=capsule-created" {
		t.Fatalf("create: %d to %q", p.status, p.header.Get("Location"))
	}
	if p := br.post("/dashboard/capsules", url.Values{"csrf_token": {tok}, "name": {"docs"}}); p.status != http.StatusConflict {
		t.Fatalf("duplicate: %d", p.status)
	}

	// Uploads: none, forged, too large, then two files.
	if p := upload(t, br, "/dashboard/capsules/docs/items", tok, nil); p.status != http.StatusBadRequest {
		t.Fatalf("no files: %d", p.status)
	}
	if p := upload(t, br, "/dashboard/capsules/docs/items", "forged", map[string]string{"a.txt": "x"}); p.status != http.StatusForbidden {
		t.Fatalf("forged upload: %d", p.status)
	}
	if p := upload(t, br, "/dashboard/capsules/docs/items", tok, map[string]string{"big.txt": strings.Repeat("x", 1<<20+1)}); p.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("too large: %d", p.status)
	}
	p = upload(t, br, "/dashboard/capsules/docs/items", tok, map[string]string{"guide.md": "# Guide\nthe zebra crossing", "notes.txt": "plain notes"})
	if p.status != http.StatusSeeOther {
		t.Fatalf("upload: %d\n%s", p.status, p.body)
	}
	page := br.get("/dashboard/capsules/docs")
	shown := strings.ReplaceAll(page.body, "<wbr>", "") // file names carry break opportunities
	for _, want := range []string{"guide.md", "notes.txt", "ready", "the manual"} {
		if !strings.Contains(shown, want) {
			t.Errorf("capsule page lacks %q", want)
		}
	}
	if p := br.get("/dashboard/capsules"); !strings.Contains(p.body, `href="/dashboard/capsules/docs"`) {
		t.Error("capsule list lacks docs")
	}

	// Playground: results, scores and the curl command.
	p = br.get("/dashboard/playground?capsule=docs&query=zebra&limit=5&mode=keyword&file_types=text%2Fmarkdown&min_score=0.1&metadata=lang%3Den")
	if p.status != http.StatusOK {
		t.Fatalf("playground: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{"1 results", "guide.md", "0.875", "zebra crossing", "curl -sS &#39;http://", "/capsules/docs/query&#39;",
		`&#34;mode&#34;:&#34;keyword&#34;`, `&#34;limit&#34;:5`, `&#34;metadata&#34;:{&#34;lang&#34;:&#34;en&#34;}`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("playground lacks %q", want)
		}
	}
	fc.mu.Lock()
	q := fc.queries[len(fc.queries)-1]
	fc.mu.Unlock()
	if q.Limit != 5 || q.Wishlist.Mode != domain.ModeKeyword || !slices.Equal(q.Wishlist.FileTypes, []string{"text/markdown"}) || q.Wishlist.MinScore != 0.1 {
		t.Errorf("the service got %+v", q)
	}
	for _, tc := range []struct{ qs, want string }{
		{"capsule=docs&query=x&limit=1000", "limit must be"},
		{"capsule=docs&query=x&mode=psychic", "mode must be"},
		{"capsule=docs&query=", "type a query"},
		{"capsule=nope&query=x", "not found"},
		{"capsule=docs&query=x&added_after=yesterday", "not a date"},
	} {
		if p := br.get("/dashboard/playground?" + tc.qs); p.status < 400 || !strings.Contains(p.body, tc.want) {
			t.Errorf("%s: %d, want an error with %q", tc.qs, p.status, tc.want)
		}
	}

	// Delete an item and the capsule, each through its confirmation.
	items, _ := fc.ListItems(context.Background(), "docs")
	id := items[0].ID
	if p := br.get("/dashboard/capsules/docs/items/" + id + "/delete"); p.status != http.StatusOK || !strings.Contains(p.body, "Delete the item") {
		t.Fatalf("item confirm: %d", p.status)
	}
	if p := br.post("/dashboard/capsules/docs/items/"+id+"/delete", url.Values{"csrf_token": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete item: %d", p.status)
	}
	if items, _ := fc.ListItems(context.Background(), "docs"); len(items) != 1 {
		t.Fatalf("%d items after deleting one of two", len(items))
	}
	if p := br.get("/dashboard/capsules/docs/delete"); !strings.Contains(p.body, "Delete the capsule “docs”?") {
		t.Fatal("no capsule confirmation")
	}
	if p := br.post("/dashboard/capsules/docs/delete", url.Values{"csrf_token": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete capsule: %d", p.status)
	}
	if p := br.get("/dashboard/capsules/docs"); p.status != http.StatusNotFound {
		t.Fatalf("deleted capsule page: %d", p.status)
	}
}

// fakeMemory is an in-memory Memory for the page tests.
type fakeMemory struct {
	mu   sync.Mutex
	mems map[string][]domain.Memory
}

func (f *fakeMemory) ListNamespaces(context.Context) ([]domain.Namespace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Namespace
	for ns, ms := range f.mems {
		out = append(out, domain.Namespace{Name: ns, MemoryCount: len(ms)})
	}
	slices.SortFunc(out, func(a, b domain.Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *fakeMemory) ListMemories(_ context.Context, ns, search string, limit int) ([]domain.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ms, ok := f.mems[ns]
	if !ok {
		return nil, domain.NotFound("namespace", ns)
	}
	var out []domain.Memory
	for _, m := range ms {
		if strings.Contains(m.Content, search) && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeMemory) DeleteMemory(_ context.Context, ns, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.mems[ns])
	f.mems[ns] = slices.DeleteFunc(f.mems[ns], func(m domain.Memory) bool { return m.ID == id })
	if len(f.mems[ns]) == n {
		return domain.NotFound("memory", id)
	}
	return nil
}

func (f *fakeMemory) DeleteNamespace(_ context.Context, ns string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.mems[ns]; !ok {
		return domain.NotFound("namespace", ns)
	}
	delete(f.mems, ns)
	return nil
}

func (f *fakeMemory) ExportNamespace(_ context.Context, ns string, w io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.mems[ns] {
		fmt.Fprintf(w, "{\"id\":%q,\"content\":%q}\n", m.ID, m.Content)
	}
	return nil
}

func TestNamespacePages(t *testing.T) {
	t.Parallel()
	fm := &fakeMemory{mems: map[string][]domain.Memory{
		"alice": {{ID: "mem_1", Namespace: "alice", Kind: domain.MemoryFact, Content: "Alice likes tea"},
			{ID: "mem_2", Namespace: "alice", Kind: domain.MemoryTurn, Role: "user", Content: "I moved to Lyon"}},
		"bob": {{ID: "mem_3", Namespace: "bob", Kind: domain.MemoryNote, Content: "Bob's note"}},
	}}
	b := setup(t, options{memory: fm})
	br := b.browser(t)
	br.mustSignIn()
	p := br.get("/dashboard/namespaces")
	if !strings.Contains(p.body, `href="/dashboard/namespaces/alice"`) || !strings.Contains(p.body, ">2<") {
		t.Fatalf("namespace list:\n%s", p.body)
	}
	p = br.get("/dashboard/namespaces/alice?q=tea")
	if !strings.Contains(p.body, "Alice likes tea") || strings.Contains(p.body, "Lyon") {
		t.Fatal("search did not narrow the memories")
	}
	tok := csrf(t, p)
	p = br.get("/dashboard/namespaces/alice/export")
	if p.status != http.StatusOK || !strings.Contains(p.header.Get("Content-Disposition"), `filename="alice.jsonl"`) || strings.Count(p.body, "\n") != 2 {
		t.Fatalf("export: %d %q\n%s", p.status, p.header.Get("Content-Disposition"), p.body)
	}
	if p := br.post("/dashboard/namespaces/alice/memories/mem_2/delete", url.Values{"csrf_token": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete memory: %d", p.status)
	}
	if p := br.get("/dashboard/namespaces/bob/delete"); !strings.Contains(p.body, "Delete the namespace “bob”?") {
		t.Fatal("no namespace confirmation")
	}
	if p := br.post("/dashboard/namespaces/bob/delete", url.Values{"csrf_token": {"forged"}}); p.status != http.StatusForbidden {
		t.Fatalf("forged namespace delete: %d", p.status)
	}
	if p := br.post("/dashboard/namespaces/bob/delete", url.Values{"csrf_token": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete namespace: %d", p.status)
	}
	ns, _ := fm.ListNamespaces(context.Background())
	if len(ns) != 1 || ns[0].MemoryCount != 1 {
		t.Fatalf("after the deletes: %+v", ns)
	}
	if p := br.get("/dashboard/namespaces/..%2Fetc"); p.status != http.StatusBadRequest && p.status != http.StatusNotFound {
		t.Fatalf("bad namespace: %d", p.status)
	}
}

func TestStatusPage(t *testing.T) {
	t.Parallel()
	b := setup(t, options{status: func(context.Context) dashboard.Status {
		return dashboard.Status{Store: "sqlite (test)", Embedder: "all-MiniLM-L6-v2 (onnx)", Semantic: true,
			Engines: []dashboard.Engine{{Name: "svc-1", Kind: "upstream", URL: "http://127.0.0.1:9/v1", OK: false, Detail: "connection refused"}},
			Checks:  []dashboard.Check{{Name: "store", OK: true}},
			Figures: []dashboard.Figure{{Label: "API requests", Value: "42"}}}
	}})
	br := b.browser(t)
	br.mustSignIn()
	p := br.get("/dashboard/")
	for _, want := range []string{"sqlite (test)", "all-MiniLM-L6-v2 (onnx)", ">on<", "svc-1", "connection refused", "API requests", "42", "Active API keys", "test"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}

func TestAssets(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	br := b.browser(t)
	for path, ct := range map[string]string{"/dashboard/assets/app.css": "text/css", "/dashboard/assets/app.js": "javascript", "/dashboard/assets/icon.svg": "image/svg+xml"} {
		if p := br.get(path); p.status != http.StatusOK || !strings.Contains(p.header.Get("Content-Type"), ct) {
			t.Errorf("%s: %d %q", path, p.status, p.header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/dashboard/assets/nope.js", "/dashboard/assets/..%2Fdashboard.go"} {
		if p := br.get(path); p.status != http.StatusNotFound {
			t.Errorf("%s: %d", path, p.status)
		}
	}
}

var (
	regexpSecret = regexp.MustCompile(`value="(csk_[A-Za-z0-9]+)"`)
	regexpToken  = regexp.MustCompile(`value="(cst_[^"]+)"`)
)

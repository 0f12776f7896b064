package conformance_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestIsolationSweep gives tenant B a key with every scope except admin,
// allowed only its own capsule and namespace, and tries tenant A's capsule,
// item, namespace, memory, key and token on every endpoint that takes one.
// Each attempt must answer 403 or 404, and no body may carry any of A's
// data. Listings must not show A's capsule or namespace to B.
func TestIsolationSweep(t *testing.T) {
	t.Parallel()
	const (
		capA, capB = "iso-a-cap", "iso-b-cap"
		nsA, nsB   = "iso-a-ns", "iso-b-ns"
		secretA    = "iso-a-secret-7c1f"
	)
	// Tenant A's data, made with the admin key.
	expect(t, do(t, req{method: "POST", path: "/v1/capsules", cred: srv.admin, body: map[string]any{"name": capA}}), http.StatusCreated)
	expect(t, do(t, req{method: "POST", path: "/v1/capsules", cred: srv.admin, body: map[string]any{"name": capB}}), http.StatusCreated)
	var item struct {
		ID string `json:"id"`
	}
	expect(t, do(t, req{method: "POST", path: "/v1/capsules/" + capA + "/items?wait=true", cred: srv.admin,
		body: map[string]any{"content": "The launch code is " + secretA + "."}}), http.StatusCreated).JSON(t, &item)
	memA := addMemory(t, srv.admin, nsA, "Tenant A remembers "+secretA)
	addMemory(t, srv.admin, nsB, "tenant B's own memory")
	keyA, _ := newKey(t, map[string]any{"name": "iso-tenant-a " + secretA, "scopes": []string{"chat", "memory", "capsules:read", "capsules:write"},
		"capsules": []string{capA}, "namespaces": []string{nsA}})
	_, b := newKey(t, map[string]any{"scopes": []string{"chat", "memory", "capsules:read", "capsules:write"},
		"capsules": []string{capB}, "namespaces": []string{nsB}})
	var tok struct {
		Token string `json:"token"`
	}
	expect(t, do(t, req{method: "POST", path: "/v1/tokens", cred: b, body: map[string]any{"namespaces": []string{nsB}}}), http.StatusCreated).JSON(t, &tok)

	chat := map[string]any{"model": "memory-extractive", "messages": []map[string]any{{"role": "user", "content": "what is the launch code?"}}}
	query := map[string]any{"query": "launch code", "limit": 5}
	attempts := []struct {
		name string
		r    req
	}{
		{"get capsule", req{method: "GET", path: "/v1/capsules/" + capA}},
		{"delete capsule", req{method: "DELETE", path: "/v1/capsules/" + capA}},
		{"list items", req{method: "GET", path: "/v1/capsules/" + capA + "/items"}},
		{"add item", req{method: "POST", path: "/v1/capsules/" + capA + "/items", body: map[string]any{"content": "planted"}}},
		{"get item", req{method: "GET", path: "/v1/capsules/" + capA + "/items/" + item.ID}},
		{"get item text", req{method: "GET", path: "/v1/capsules/" + capA + "/items/" + item.ID + "/text"}},
		{"reindex item", req{method: "POST", path: "/v1/capsules/" + capA + "/items/" + item.ID + "/reindex"}},
		{"delete item", req{method: "DELETE", path: "/v1/capsules/" + capA + "/items/" + item.ID}},
		{"A's item through B's capsule", req{method: "GET", path: "/v1/capsules/" + capB + "/items/" + item.ID}},
		{"A's item text through B's capsule", req{method: "GET", path: "/v1/capsules/" + capB + "/items/" + item.ID + "/text"}},
		{"delete A's item through B's capsule", req{method: "DELETE", path: "/v1/capsules/" + capB + "/items/" + item.ID}},
		{"query by path", req{method: "POST", path: "/capsules/" + capA + "/query", body: query}},
		{"query by host", req{method: "POST", path: "/query", host: capA + ".capsules.test", body: query}},
		{"get namespace", req{method: "GET", path: "/v1/memory/namespaces/" + nsA}},
		{"delete namespace", req{method: "DELETE", path: "/v1/memory/namespaces/" + nsA}},
		{"list memories", req{method: "GET", path: "/v1/memory/namespaces/" + nsA + "/memories"}},
		{"add memory", req{method: "POST", path: "/v1/memory/namespaces/" + nsA + "/memories", body: map[string]any{"content": "planted"}}},
		{"get memory", req{method: "GET", path: "/v1/memory/namespaces/" + nsA + "/memories/" + memA.ID}},
		{"update memory", req{method: "PATCH", path: "/v1/memory/namespaces/" + nsA + "/memories/" + memA.ID, body: map[string]any{"content": "overwritten"}}},
		{"delete memory", req{method: "DELETE", path: "/v1/memory/namespaces/" + nsA + "/memories/" + memA.ID}},
		{"set memory expiry", req{method: "PUT", path: "/v1/memory/namespaces/" + nsA + "/memories/" + memA.ID + "/expiry", body: map[string]any{"expires_at": nil}}},
		{"A's memory through B's namespace", req{method: "GET", path: "/v1/memory/namespaces/" + nsB + "/memories/" + memA.ID}},
		{"update A's memory through B's namespace", req{method: "PATCH", path: "/v1/memory/namespaces/" + nsB + "/memories/" + memA.ID, body: map[string]any{"content": "overwritten"}}},
		{"delete A's memory through B's namespace", req{method: "DELETE", path: "/v1/memory/namespaces/" + nsB + "/memories/" + memA.ID}},
		{"export namespace", req{method: "GET", path: "/v1/memory/namespaces/" + nsA + "/export"}},
		{"import namespace", req{method: "POST", path: "/v1/memory/namespaces/" + nsA + "/import", body: `{"content":"planted"}` + "\n", header: map[string]string{"Content-Type": "application/x-ndjson"}}},
		{"namespace failures", req{method: "GET", path: "/v1/memory/namespaces/" + nsA + "/failures"}},
		{"memory chat", req{method: "POST", path: "/v1/memory/chat/completions?namespace=" + nsA, body: chat}},
		{"token for A's namespace", req{method: "POST", path: "/v1/tokens", body: map[string]any{"namespaces": []string{nsA}}}},
		{"list keys", req{method: "GET", path: "/v1/keys"}},
		{"get A's key", req{method: "GET", path: "/v1/keys/" + keyA}},
		{"revoke A's key", req{method: "DELETE", path: "/v1/keys/" + keyA}},
		{"create a key", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": "escalate", "scopes": []string{"admin"}}}},
	}
	for _, cred := range []struct{ name, secret string }{{"B's key", b}, {"B's token", tok.Token}} {
		for _, a := range attempts {
			r := a.r
			r.cred = cred.secret
			got := do(t, r)
			if got.Status != http.StatusForbidden && got.Status != http.StatusNotFound &&
				!(cred.name == "B's token" && got.Status == http.StatusUnauthorized) {
				t.Errorf("%s: %s %s: status %d, want 403 or 404: %s", cred.name, a.name, r.path, got.Status, got.Body)
			}
			if strings.Contains(string(got.Body), secretA) {
				t.Errorf("%s: %s %s: the body carries tenant A's data: %s", cred.name, a.name, r.path, got.Body)
			}
		}
	}

	// Listings show B only its own capsule and namespace.
	for _, l := range []struct{ path, mine, theirs string }{
		{"/v1/capsules", capB, capA},
		{"/v1/memory/namespaces", nsB, nsA},
	} {
		got := expect(t, do(t, req{method: "GET", path: l.path, cred: b}), http.StatusOK)
		if strings.Contains(string(got.Body), l.theirs) || strings.Contains(string(got.Body), secretA) {
			t.Errorf("GET %s as B shows tenant A's %s: %s", l.path, l.theirs, got.Body)
		}
		if !strings.Contains(string(got.Body), l.mine) {
			t.Errorf("GET %s as B does not show B's own %s: %s", l.path, l.mine, got.Body)
		}
	}

	// A's data is all still there, unchanged.
	expect(t, do(t, req{method: "GET", path: "/v1/capsules/" + capA + "/items/" + item.ID, cred: srv.admin}), http.StatusOK)
	got := expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces/" + nsA + "/memories/" + memA.ID, cred: srv.admin}), http.StatusOK)
	if !strings.Contains(string(got.Body), secretA) {
		t.Errorf("tenant A's memory changed: %s", got.Body)
	}
	expect(t, do(t, req{method: "GET", path: "/v1/keys/" + keyA, cred: srv.admin}), http.StatusOK)
}

package conformance_test

import (
	"net/http"
	"strings"
	"testing"
)

// Every malformed request gets a 400 whose error names the offending field,
// before any handler runs (the gate validates against openapi.yaml).
func TestMalformedRequests(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	chat := func(extra map[string]any) map[string]any {
		b := map[string]any{"model": "svc-1", "messages": []any{user}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name      string
		r         req
		param     string // the field the error must name ("" = none)
		code      string
		msgSubstr string
	}{
		{"invalid JSON", req{method: "POST", path: "/v1/keys", body: `{"name": "x",`}, "", "invalid_json", "not valid JSON"},
		{"JSON of the wrong type", req{method: "POST", path: "/v1/keys", body: `[1,2]`}, "", "invalid_value", ""},
		{"missing required field", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": "x"}}, "scopes", "invalid_value", "scopes"},
		{"unknown field", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": "x", "scopes": []string{"chat"}, "colour": "red"}}, "colour", "invalid_value", "colour"},
		{"unknown enum value", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": "x", "scopes": []string{"chat", "superuser"}}}, "scopes[1]", "invalid_value", ""},
		{"wrong type", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": 42, "scopes": []string{"chat"}}}, "name", "invalid_value", ""},
		{"empty string", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": "", "scopes": []string{"chat"}}}, "name", "invalid_value", ""},
		{"bad capsule name in allow-list", req{method: "POST", path: "/v1/keys", body: map[string]any{"name": "x", "scopes": []string{"chat"}, "capsules": []string{"Bad Name"}}}, "capsules[0]", "invalid_value", ""},
		{"out of range", req{method: "POST", path: "/v1/tokens", body: map[string]any{"ttl_seconds": 5}}, "ttl_seconds", "invalid_value", ""},
		{"bad path parameter", req{method: "GET", path: "/v1/keys/not-a-key-id"}, "key", "invalid_value", ""},
		{"bad query parameter", req{method: "GET", path: "/v1/capsules/docs/items?limit=0"}, "limit", "invalid_value", ""},
		{"bad query parameter type", req{method: "GET", path: "/v1/capsules/docs/items?limit=ten"}, "limit", "invalid_value", ""},
		{"bad namespace", req{method: "POST", path: "/v1/memory/chat/completions?namespace=-bad", body: chat(nil)}, "namespace", "invalid_value", ""},
		{"chat: missing model", req{method: "POST", path: "/v1/chat/completions", body: map[string]any{"messages": []any{user}}}, "model", "invalid_value", ""},
		{"chat: no messages", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"messages": []any{}})}, "messages", "invalid_value", ""},
		{"chat: content of the wrong type", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"messages": []any{user, map[string]any{"role": "user", "content": 7}}})}, "messages[1].content", "invalid_value", ""},
		{"chat: user message without content", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"messages": []any{map[string]any{"role": "user"}}})}, "messages[0].content", "invalid_value", "missing"},
		{"chat: tool message without tool_call_id", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"messages": []any{user, map[string]any{"role": "tool", "content": "[]"}}})}, "messages[1].tool_call_id", "invalid_value", "missing"},
		{"chat: bad text part", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image", "text": "x"}}}}})}, "messages[0].content[0].type", "invalid_value", ""},
		{"chat: unknown tool_choice", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"tool_choice": "always"})}, "tool_choice", "invalid_value", ""},
		{"chat: stop of the wrong type", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"stop": 3})}, "stop", "invalid_value", ""},
		{"chat: n out of range", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"n": 0})}, "n", "invalid_value", ""},
		{"chat: temperature out of range", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"temperature": 9})}, "temperature", "invalid_value", ""},
		{"chat: bad response_format", req{method: "POST", path: "/v1/chat/completions", body: chat(map[string]any{"response_format": map[string]any{"type": "json_schema"}})}, "response_format.json_schema", "invalid_value", "missing"},
		{"query: unknown wishlist key", req{method: "POST", path: "/capsules/docs/query", body: map[string]any{"query": "x", "wishlist": map[string]any{"colour": "red"}}}, "wishlist.colour", "invalid_value", ""},
		{"query: bad date", req{method: "POST", path: "/capsules/docs/query", body: map[string]any{"query": "x", "wishlist": map[string]any{"added_after": "yesterday"}}}, "wishlist.added_after", "invalid_value", ""},
		{"query: bad metadata operator", req{method: "POST", path: "/capsules/docs/query", body: map[string]any{"query": "x", "wishlist": map[string]any{"metadata": map[string]any{"year": map[string]any{"between": 1}}}}}, "wishlist.metadata.year.between", "invalid_value", "unsupported"},
		{"query: limit over 100", req{method: "POST", path: "/capsules/docs/query", body: map[string]any{"query": "x", "limit": 101}}, "limit", "invalid_value", ""},
		{"query: empty query", req{method: "POST", path: "/capsules/docs/query", body: map[string]any{"query": ""}}, "query", "invalid_value", ""},
		{"missing body", req{method: "POST", path: "/v1/keys"}, "", "missing_body", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.cred = srv.admin
			resp := expect(t, do(t, tt.r), http.StatusBadRequest)
			e := resp.Err(t)
			if e.Error.Type != "invalid_request_error" || *e.Error.Code != tt.code {
				t.Fatalf("error %+v, want code %s", e.Error, tt.code)
			}
			got := ""
			if e.Error.Param != nil {
				got = *e.Error.Param
			}
			if got != tt.param {
				t.Fatalf("param %q, want %q (message %q)", got, tt.param, e.Error.Message)
			}
			if !strings.Contains(e.Error.Message, tt.msgSubstr) {
				t.Fatalf("message %q lacks %q", e.Error.Message, tt.msgSubstr)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	big := `{"name": "` + strings.Repeat("x", 2<<20) + `", "scopes": ["chat"]}`
	resp := expect(t, do(t, req{method: "POST", path: "/v1/keys", cred: srv.admin, body: big}), http.StatusRequestEntityTooLarge)
	if e := resp.Err(t); *e.Error.Code != "body_too_large" || e.Error.Type != "request_too_large" {
		t.Fatalf("error %+v", e.Error)
	}
}

func TestUnknownRoutes(t *testing.T) {
	for _, r := range []req{
		{method: "GET", path: "/v2/nothing"},
		{method: "GET", path: "/v1/chat/completions"},
		{method: "PATCH", path: "/v1/keys"},
	} {
		resp := expect(t, do(t, r), http.StatusNotFound)
		if e := resp.Err(t); e.Error.Type != "not_found_error" {
			t.Fatalf("%s %s: %+v", r.method, r.path, e.Error)
		}
	}
}

package conformance_test

import (
	"net/http"
	"strings"
	"testing"
)

// askResult is the spec's AskResult.
type askResult struct {
	Question  string    `json:"question"`
	Engine    string    `json:"engine"`
	Reported  bool      `json:"reported"`
	Turns     int       `json:"turns"`
	ToolCalls int       `json:"tool_calls"`
	Items     []wireHit `json:"items"`
	Trace     []struct {
		Turn         int     `json:"turn"`
		Content      string  `json:"content"`
		FinishReason string  `json:"finish_reason"`
		DurationMs   float64 `json:"duration_ms"`
		EngineMs     float64 `json:"engine_ms"`
		ToolCalls    []struct {
			Name        string   `json:"name"`
			Arguments   string   `json:"arguments"`
			ResultCount int      `json:"result_count"`
			ResultBytes int      `json:"result_bytes"`
			ResultIDs   []string `json:"result_ids"`
			Error       *string  `json:"error"`
		} `json:"tool_calls"`
	} `json:"trace"`
}

// askCapsule holds a few passages of a HotpotQA bridge question and its
// distractors.
func askCapsule(t *testing.T, name string) map[string]string {
	t.Helper()
	createCapsule(t, name)
	ids := map[string]string{}
	for uri, text := range map[string]string{
		"kiss-and-tell":  "Kiss and Tell (1945 film). Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as Corliss Archer.",
		"shirley-temple": "Shirley Temple. Shirley Temple Black (1928-2014) was an American actress, singer, dancer and diplomat who served as Chief of Protocol of the United States.",
		"meet-corliss":   "Meet Corliss Archer. Meet Corliss Archer is an American radio sitcom that ran on CBS from 1943 to 1956.",
		"ed-wood":        "Ed Wood. Edward Davis Wood Jr. was an American filmmaker, actor, writer, producer and director.",
		"radio-city":     "Radio City. Radio City is India's first private FM radio station and was started on 3 July 2001.",
		"janet-waldo":    "Janet Waldo. Janet Marie Waldo was an American radio and voice actress, the voice of Corliss Archer on radio.",
	} {
		ids[uri] = addText(t, name, map[string]any{"content": text, "uri": uri}, http.StatusCreated).ID
	}
	return ids
}

func TestAsk(t *testing.T) {
	t.Parallel()
	ids := askCapsule(t, "ask-films")
	q := "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
	var res askResult
	expect(t, do(t, req{method: "POST", path: "/capsules/ask-films/ask", cred: srv.admin, body: map[string]any{"question": q}}), http.StatusOK).JSON(t, &res)
	if !res.Reported || res.Engine != "builtin" || res.Question != q || res.Turns != len(res.Trace) || res.Turns < 2 {
		t.Fatalf("result: reported %v engine %q turns %d trace %d", res.Reported, res.Engine, res.Turns, len(res.Trace))
	}
	rank := map[string]int{}
	for i, it := range res.Items {
		if it.Content == "" || it.URI == "" {
			t.Errorf("item %d has no evidence: %+v", i, it)
		}
		rank[it.ItemID] = i + 1
	}
	// Both supporting passages are reported; the one that names the film
	// comes first or second.
	if r := rank[ids["kiss-and-tell"]]; r == 0 || r > 2 {
		t.Errorf("kiss-and-tell ranked %d, want 1 or 2: %+v", r, res.Items)
	}
	if rank[ids["shirley-temple"]] == 0 {
		t.Errorf("shirley-temple not reported: %+v", res.Items)
	}
	calls, reported := 0, false
	for i, turn := range res.Trace {
		if turn.Turn != i+1 || !strings.Contains(turn.Content, "<think>") {
			t.Errorf("turn %d: %+v", i+1, turn)
		}
		for _, c := range turn.ToolCalls {
			calls++
			if c.ResultBytes <= 0 || c.ResultCount != len(c.ResultIDs) || !strings.HasPrefix(c.Arguments, "{") {
				t.Errorf("turn %d call %+v", turn.Turn, c)
			}
			reported = reported || c.Name == "report_helpful_ids"
		}
	}
	if calls != res.ToolCalls || !reported || res.Trace[len(res.Trace)-1].FinishReason != "tool_calls" {
		t.Errorf("tool calls %d (trace %d), reported %v", res.ToolCalls, calls, reported)
	}

	// The turn limit ends the loop before any report.
	expect(t, do(t, req{method: "POST", path: "/capsules/ask-films/ask", cred: srv.admin,
		body: map[string]any{"question": q, "max_turns": 1, "limit": 3, "engine": "builtin"}}), http.StatusOK).JSON(t, &res)
	if res.Reported || res.Turns != 1 || len(res.Items) != 0 {
		t.Errorf("max_turns 1: reported %v turns %d items %d", res.Reported, res.Turns, len(res.Items))
	}
	for _, c := range res.Trace[0].ToolCalls {
		if c.ResultCount > 3 {
			t.Errorf("limit 3: %s returned %d", c.Name, c.ResultCount)
		}
	}
}

func TestAskErrors(t *testing.T) {
	t.Parallel()
	askCapsule(t, "ask-open")
	createCapsule(t, "ask-secret")
	_, reader := newKey(t, map[string]any{"scopes": []string{"capsules:read"}, "capsules": []string{"ask-open"}})
	_, chatOnly := newKey(t, map[string]any{"scopes": []string{"chat"}})
	ok := map[string]any{"question": "Who played Corliss Archer?"}
	expect(t, do(t, req{method: "POST", path: "/capsules/ask-open/ask", cred: reader, body: ok}), http.StatusOK)

	tests := []struct {
		name   string
		r      req
		status int
		code   string
		param  string
	}{
		{"no credentials", req{path: "/capsules/ask-open/ask", body: ok}, http.StatusUnauthorized, "", ""},
		{"no capsules:read scope", req{path: "/capsules/ask-open/ask", cred: chatOnly, body: ok}, http.StatusForbidden, "", ""},
		{"outside the allow-list", req{path: "/capsules/ask-secret/ask", cred: reader, body: ok}, http.StatusForbidden, "capsule_not_allowed", ""},
		{"unknown capsule", req{path: "/capsules/ask-nowhere/ask", cred: srv.admin, body: ok}, http.StatusNotFound, "", ""},
		{"no question", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{}}, http.StatusBadRequest, "", "question"},
		{"blank question", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": " \n\t"}}, http.StatusBadRequest, "", "question"},
		{"max_turns 0", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": "x", "max_turns": 0}}, http.StatusBadRequest, "", "max_turns"},
		{"limit 101", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": "x", "limit": 101}}, http.StatusBadRequest, "", "limit"},
		{"unknown field", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": "x", "model": "svc-1"}}, http.StatusBadRequest, "", ""},
		{"unknown engine", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": "x", "engine": "gpt"}}, http.StatusBadRequest, "", "engine"},
		{"engine not configured", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": "x", "engine": "upstream"}}, http.StatusUnprocessableEntity, "engine_unavailable", "engine"},
		{"malformed JSON", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: `{"question":`}, http.StatusBadRequest, "", ""},
		{"body too large", req{path: "/capsules/ask-open/ask", cred: srv.admin, body: map[string]any{"question": strings.Repeat("x", 2<<20)}}, http.StatusRequestEntityTooLarge, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.r.method = "POST"
			e := expect(t, do(t, tt.r), tt.status).Err(t)
			if tt.code != "" && (e.Error.Code == nil || *e.Error.Code != tt.code) {
				t.Errorf("code %v, want %s", e.Error.Code, tt.code)
			}
			if tt.param != "" && (e.Error.Param == nil || !strings.HasPrefix(*e.Error.Param, tt.param)) {
				t.Errorf("param %v, want %s", e.Error.Param, tt.param)
			}
		})
	}
}

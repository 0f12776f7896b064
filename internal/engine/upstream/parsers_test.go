package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"capsuled/internal/chatwire"
	"capsuled/internal/domain"
	"capsuled/internal/oai"
	"capsuled/internal/reasoning"
	"capsuled/internal/toolcall"
)

// parserCase is one reply of the shared parser suite
// (internal/toolcall/testdata/parsers.json): a model's text, the parsers a
// deployment names for it, and what the engine must make of it.
type parserCase struct {
	Name            string `json:"name"`
	ToolParser      string `json:"tool_parser"`
	ReasoningParser string `json:"reasoning_parser"`
	Text            string `json:"text"`
	Content         string `json:"content"`
	Reasoning       string `json:"reasoning"`
	Calls           []struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"calls"`
}

func loadParserCases(t testing.TB) []parserCase {
	t.Helper()
	b, err := os.ReadFile("../../toolcall/testdata/parsers.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []parserCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// chunkings split a text at rune boundaries: whole, every rune, fixed
// sizes, and seeded random cuts.
func chunkings(text string) map[string][]string {
	runes := []rune(text)
	out := map[string][]string{"whole": {text}}
	for _, size := range []int{1, 2, 3, 7} {
		var parts []string
		for i := 0; i < len(runes); i += size {
			parts = append(parts, string(runes[i:min(i+size, len(runes))]))
		}
		out[fmt.Sprintf("every %d", size)] = parts
	}
	for seed := range uint64(3) {
		r := rand.New(rand.NewPCG(seed, 7))
		var parts []string
		for i := 0; i < len(runes); {
			n := 1 + r.IntN(12)
			parts = append(parts, string(runes[i:min(i+n, len(runes))]))
			i += n
		}
		out[fmt.Sprintf("random %d", seed)] = parts
	}
	return out
}

// fakeTextServer is a fake OpenAI-compatible server (for the unit test of
// the engine around it) that answers every request with text as the
// content: as one JSON reply, or streamed in the given chunks.
func fakeTextServer(t *testing.T, text string, chunks []string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "choices": []any{map[string]any{"index": 0,
				"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			b, _ := json.Marshal(map[string]any{"id": "c", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": c}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestParserSuite is the one suite every registered parser passes: each
// case's reply, parsed by the parsers a deployment names, gives the
// expected content, reasoning and calls, and the same choice whether the
// upstream answered at once or streamed it cut anywhere.
func TestParserSuite(t *testing.T) {
	t.Parallel()
	cases := loadParserCases(t)
	seenTool, seenReasoning := map[string]bool{}, map[string]bool{}
	for _, tc := range cases {
		seenTool[tc.ToolParser] = true
		seenReasoning[tc.ReasoningParser] = true
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			want := domain.Choice{Content: tc.Content, Reasoning: tc.Reasoning, FinishReason: domain.FinishStop}
			for i, c := range tc.Calls {
				want.ToolCalls = append(want.ToolCalls, domain.ToolCall{Type: "function", Name: c.Name, Arguments: c.Arguments, ID: chatwire.CallID(i, c.Name, c.Arguments)})
			}
			if len(want.ToolCalls) > 0 {
				want.FinishReason = domain.FinishToolCalls
			}
			for how, chunks := range chunkings(tc.Text) {
				srv := fakeTextServer(t, tc.Text, chunks)
				e, err := New(Config{URL: srv.URL + "/v1", Model: "m", ToolParser: tc.ToolParser, ReasoningParser: tc.ReasoningParser})
				if err != nil {
					t.Fatal(err)
				}
				for _, stream := range []bool{false, true} {
					got, _, err := e.Generate(context.Background(), request(stream))
					if err != nil {
						t.Fatalf("%s stream=%v: %v", how, stream, err)
					}
					if diff := cmp.Diff([]domain.Choice{want}, got); diff != "" {
						t.Fatalf("%s stream=%v (-want +got):\n%s", how, stream, diff)
					}
				}
			}
		})
	}
	for _, n := range toolcall.Names() {
		if !seenTool[n] {
			t.Errorf("tool-call parser %s has no case in the shared suite", n)
		}
	}
	for _, n := range reasoning.Names() {
		if !seenReasoning[n] {
			t.Errorf("reasoning parser %s has no case in the shared suite", n)
		}
	}
}

func TestUnknownParserNamesFailWithTheKnownOnes(t *testing.T) {
	t.Parallel()
	_, err := New(Config{URL: "http://127.0.0.1:1/v1", Model: "m", ToolParser: "hermess"})
	if err == nil || !containsAll(err.Error(), toolcall.Names()) {
		t.Fatalf("%v, want the known tool-call parsers listed", err)
	}
	_, err = New(Config{URL: "http://127.0.0.1:1/v1", Model: "m", ReasoningParser: "r1"})
	if err == nil || !containsAll(err.Error(), reasoning.Names()) {
		t.Fatalf("%v, want the known reasoning parsers listed", err)
	}
}

func containsAll(s string, names []string) bool {
	for _, n := range names {
		if !strings.Contains(s, n) {
			return false
		}
	}
	return true
}

// FuzzStreamChunking: for any text and any cuts, every pair of parsers
// gives the same choice for the text streamed in pieces (through the oai
// client's accumulator) as for the text at once.
func FuzzStreamChunking(f *testing.F) {
	for _, tc := range loadParserCases(f) {
		f.Add(tc.Text, uint64(len(tc.Text)))
	}
	f.Add("<think>a</think><tool_call>{\"name\":\"x\",\"arguments\":{}}</tool_call>", uint64(3))
	var engines []*Engine
	for _, tp := range toolcall.Names() {
		for _, rp := range reasoning.Names() {
			e, err := New(Config{URL: "http://127.0.0.1:1/v1", Model: "m", ToolParser: tp, ReasoningParser: rp})
			if err != nil {
				f.Fatal(err)
			}
			engines = append(engines, e)
		}
	}
	f.Fuzz(func(t *testing.T, text string, seed uint64) {
		if !utf8.ValidString(text) || len(text) > 4096 {
			return
		}
		runes := []rune(text)
		r := rand.New(rand.NewPCG(seed, 1))
		acc := oai.NewAccumulator()
		for i := 0; i < len(runes); {
			n := 1 + r.IntN(8)
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": string(runes[i:min(i+n, len(runes))])}}}})
			if err := acc.Add(b); err != nil {
				t.Fatal(err)
			}
			i += n
		}
		streamed := oai.Message{Content: new(string)}
		if c := acc.Completion(); len(c.Choices) > 0 {
			streamed = c.Choices[0].Message
		}
		whole := oai.Message{Content: &text}
		for _, e := range engines {
			a, b := e.normalise(0, whole, "stop"), e.normalise(0, streamed, "stop")
			if diff := cmp.Diff(a, b); diff != "" {
				t.Fatalf("%s/%s (-whole +streamed):\n%s", e.tools.Name(), e.reasoning.Name(), diff)
			}
			for _, c := range a.ToolCalls {
				if c.Name == "" || !json.Valid([]byte(c.Arguments)) || c.Arguments[0] != '{' {
					t.Fatalf("%s: call %+v", e.tools.Name(), c)
				}
			}
		}
	})
}

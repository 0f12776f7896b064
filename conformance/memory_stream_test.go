package conformance_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// memoryChunk is the part of a streamed chunk these tests read.
type memoryChunk struct {
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage  *struct{} `json:"usage"`
	Memory *struct {
		Namespace  string   `json:"namespace"`
		Read       []string `json:"read"`
		Written    []string `json:"written"`
		Extraction string   `json:"extraction"`
	} `json:"memory"`
}

// streamChunks parses an event stream into its chunks; it fails unless the
// stream ends with [DONE].
func streamChunks(t *testing.T, body []byte) []memoryChunk {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
		}
	}
	if len(events) < 2 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %v", events)
	}
	var out []memoryChunk
	for _, e := range events[:len(events)-1] {
		var c memoryChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		out = append(out, c)
	}
	return out
}

// TestMemoryChatStreamReport checks that a streamed memory reply carries
// the memory report (ids read and written) on its last chunk only, with
// and without the usage chunk, and that the ids are those stored.
func TestMemoryChatStreamReport(t *testing.T) {
	cred := memKey(t)
	const ns = "conf-stream-report"
	// A first, non-streamed turn gives the namespace a memory to read.
	var first memoryReply
	memChat(t, cred, ns, userTurn("memory-extractive", "Our lighthouse keeper Oskar paints the lamp room blue."), http.StatusOK).JSON(t, &first)
	if len(first.Memory.Written) != 1 {
		t.Fatalf("first turn wrote %v", first.Memory.Written)
	}
	tests := []struct {
		name      string
		options   map[string]any // stream_options; nil: none
		wantUsage bool
		text      string
	}{
		{"default options (usage on, as in svc-1)", nil, true, "What colour is Oskar's lamp room?"},
		{"usage off", map[string]any{"include_usage": false}, false, "Who paints the lighthouse lamp room?"},
		{"with usage", map[string]any{"include_usage": true}, true, "Which room does Oskar paint in the lighthouse?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := userTurn("memory-extractive", tt.text)
			body["stream"] = true
			body["memory"] = map[string]any{"conversation_id": tt.name}
			if tt.options != nil {
				body["stream_options"] = tt.options
			}
			chunks := streamChunks(t, memChat(t, cred, ns, body, http.StatusOK).Body)
			last := chunks[len(chunks)-1]
			for i, c := range chunks[:len(chunks)-1] {
				if c.Memory != nil {
					t.Fatalf("chunk %d of %d carries the memory report", i, len(chunks))
				}
			}
			if last.Memory == nil {
				t.Fatalf("last chunk has no memory report: %+v", last)
			}
			if tt.wantUsage && (last.Usage == nil || len(last.Choices) != 0) {
				t.Fatalf("last chunk is not the usage chunk: %+v", last)
			}
			if !tt.wantUsage && (len(last.Choices) != 1 || last.Choices[0].FinishReason == nil) {
				t.Fatalf("last chunk is not the finish chunk: %+v", last)
			}
			rep := last.Memory
			if rep.Namespace != ns || rep.Extraction != "none" {
				t.Fatalf("report %+v", rep)
			}
			if !slices.Contains(rep.Read, first.Memory.Written[0]) {
				t.Fatalf("read %v, want the first turn's memory %s", rep.Read, first.Memory.Written[0])
			}
			if len(rep.Written) != 1 {
				t.Fatalf("written %v, want the new user turn", rep.Written)
			}
			// The reported write is the stored memory.
			var m wireMemory
			expect(t, do(t, req{method: "GET", path: "/v1/memory/namespaces/" + ns + "/memories/" + rep.Written[0], cred: cred}), http.StatusOK).JSON(t, &m)
			if !strings.Contains(m.Content, tt.text) {
				t.Fatalf("memory %s holds %q, want %q", rep.Written[0], m.Content, tt.text)
			}
		})
	}
}

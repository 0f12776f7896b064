package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchAgent runs the agent benchmark end to end on tiny sets, keyword
// only (no model needed): ingestion, the real API on 127.0.0.1:0, one-shot
// queries and the loop over HTTP through the OpenAI SDK.
func TestBenchAgent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		questions float64
	}{
		{"hotpotqa", []string{"--dataset", "testdata/bench/hotpot"}, 3},
		{"hotpotqa limit", []string{"--dataset", "testdata/bench/hotpot", "--limit", "2"}, 2},
		{"locomo category 1 only", []string{"--locomo", "testdata/bench/locomo_tiny.json"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"bench", "agent", "--embedder", "off", "--json"}, tt.args...)
			code, out, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var res map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("last line is not JSON: %v\n%s", err, out)
			}
			if res["questions"] != tt.questions {
				t.Errorf("questions = %v, want %v", res["questions"], tt.questions)
			}
			for _, k := range []string{"oneshot_both_at_10", "agent_both_at_10", "oneshot_both_at_5", "agent_both_at_5",
				"oneshot_recall_at_2", "agent_recall_at_2", "oneshot_recall_at_5", "agent_recall_at_5", "reported_share"} {
				v, ok := res[k].(float64)
				if !ok || v < 0 || v > 1 {
					t.Errorf("%s = %v, want a share in [0, 1]", k, res[k])
				}
			}
			for _, k := range []string{"turns_per_question", "tool_calls_per_question", "agent_latency_p50_ms", "agent_latency_p95_ms",
				"oneshot_latency_p50_ms", "oneshot_latency_p95_ms", "engine_turn_p50_ms"} {
				if v, ok := res[k].(float64); !ok || v <= 0 {
					t.Errorf("%s = %v, want > 0", k, res[k])
				}
			}
			// Every set here is small enough for the loop to find both
			// passages in its top 10.
			if res["agent_both_at_10"] != 1.0 {
				t.Errorf("agent_both_at_10 = %v, want 1\n%s", res["agent_both_at_10"], out)
			}
		})
	}
	if code, _, _ := runCLI(t, "bench", "agent", "--embedder", "off"); code == 0 {
		t.Error("no dataset: exit 0")
	}
}

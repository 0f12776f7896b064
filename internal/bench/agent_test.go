package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"capsuled/internal/cli"
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
		{"hotpotqa", []string{"--dataset", "testdata/hotpot"}, 3},
		{"hotpotqa limit", []string{"--dataset", "testdata/hotpot", "--limit", "2"}, 2},
		{"hotpotqa untitled", []string{"--dataset", "testdata/hotpot", "--untitled"}, 3},
		{"locomo category 1 only", []string{"--locomo", "testdata/locomo_tiny.json"}, 2},
		{"2wiki", []string{"--2wiki", "testdata/2wiki_tiny.json"}, 3},
		{"2wiki untitled", []string{"--2wiki", "testdata/2wiki_tiny.json", "--untitled"}, 3},
		{"multihop-rag", []string{"--multihop-rag", "testdata/multihoprag"}, 3}, // its null query left out
		{"multihop-rag untitled", []string{"--multihop-rag", "testdata/multihoprag", "--untitled"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := benchAgentJSON(t, tt.args...)
			if res["questions"] != tt.questions {
				t.Errorf("questions = %v, want %v", res["questions"], tt.questions)
			}
			for _, k := range []string{"oneshot_both_at_10", "agent_both_at_10", "oneshot_both_at_5", "agent_both_at_5",
				"oneshot_recall_at_2", "agent_recall_at_2", "oneshot_recall_at_5", "agent_recall_at_5", "reported_share",
				"agent_unpruned_both_at_10", "agent_unpruned_recall_at_5", "report_precision", "report_recall", "unpruned_recall", "report_recall_ratio"} {
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
			for _, k := range []string{"report_size_p50", "report_size_p90"} {
				if v, ok := res[k].(float64); !ok || v < 1 || v > 10 {
					t.Errorf("%s = %v, want 1 to 10 ids", k, res[k])
				}
			}
			if want := map[bool]string{true: "hotpotqa-untitled", false: "hotpotqa"}[slices.Contains(tt.args, "--untitled")]; strings.HasPrefix(tt.name, "hotpotqa") && res["dataset"] != want {
				t.Errorf("dataset = %v, want %s", res["dataset"], want)
			}
			if strings.HasPrefix(tt.name, "2wiki") {
				// figures per hop count: two 2-hop questions, one 4-hop
				if res["questions_hops_2"] != 2.0 || res["questions_hops_4"] != 1.0 {
					t.Errorf("questions per hop count: %v and %v, want 2 and 1", res["questions_hops_2"], res["questions_hops_4"])
				}
				for _, k := range []string{"oneshot_both_at_10_hops_4", "agent_both_at_10_hops_4", "agent_unpruned_both_at_10_hops_4", "agent_recall_at_5_hops_2"} {
					if v, ok := res[k].(float64); !ok || v < 0 || v > 1 {
						t.Errorf("%s = %v, want a share in [0, 1]", k, res[k])
					}
				}
			} else if strings.HasPrefix(tt.name, "multihop-rag") {
				// one question each of 2, 3 and 4 evidence articles; the
				// long article is more than one chunk
				if res["questions_hops_2"] != 1.0 || res["questions_hops_3"] != 1.0 || res["questions_hops_4"] != 1.0 {
					t.Errorf("questions per hop count: %v, %v and %v, want 1 each", res["questions_hops_2"], res["questions_hops_3"], res["questions_hops_4"])
				}
				if docs, chunks := res["docs"].(float64), res["chunks"].(float64); docs != 5 || chunks <= docs {
					t.Errorf("%v documents in %v chunks, want 5 in more", docs, chunks)
				}
			} else if _, ok := res["questions_hops_2"]; ok {
				t.Errorf("per-hop figures for a set without hop counts: %v", res)
			}
			// Every set here is small enough for the loop to find both
			// passages in its top 10 (untitled: before the report's cut,
			// which may leave out a passage the ranking holds).
			key := "agent_both_at_10"
			if slices.Contains(tt.args, "--untitled") || strings.HasPrefix(tt.name, "2wiki") || strings.HasPrefix(tt.name, "multihop-rag") {
				key = "agent_unpruned_both_at_10" // 2wiki, multihop-rag: up to four gold documents, and the cut may leave out one
			}
			if res[key] != 1.0 {
				t.Errorf("%s = %v, want 1\n%v", key, res[key], res)
			}
		})
	}
	if code, _, _ := runBench(t, "agent", "--embedder", "off"); code == 0 {
		t.Error("no dataset: exit 0")
	}
}

// TestBenchAgentDataDir runs the benchmark twice over one kept --data-dir:
// the second run finds the capsule and its items, reports the same figures,
// and the split and per-question outputs cover the questions asked.
func TestBenchAgentDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	run := func(extra ...string) map[string]any {
		t.Helper()
		return benchAgentJSON(t, append([]string{"--dataset", "testdata/hotpot", "--data-dir", data}, extra...)...)
	}
	first := run()
	if _, ok := first["agent_both_at_10_comparison"].(float64); !ok {
		t.Errorf("no figure per question type (comparison): %v", first)
	}
	if _, err := os.Stat(filepath.Join(data, "capsuled.db")); err != nil {
		t.Fatalf("the data dir was not kept: %v", err)
	}
	pq := filepath.Join(dir, "pq.jsonl")
	cacheFile := filepath.Join(dir, "searches.gob")
	second := run("--per-question", pq, "--search-cache", cacheFile)
	if _, err := os.Stat(cacheFile); err != nil {
		t.Fatalf("no search cache written: %v", err)
	}
	if first["ingest_reused"] != nil || second["ingest_reused"] != true {
		t.Errorf("ingest_reused: first run %v, second %v; want absent, then true", first["ingest_reused"], second["ingest_reused"])
	}
	third := run("--search-cache", cacheFile) // every search from the cache
	for _, k := range []string{"oneshot_both_at_10", "agent_both_at_10", "agent_recall_at_2", "tool_calls_per_question"} {
		if third[k] != second[k] {
			t.Errorf("%s: from the search cache %v, searched %v", k, third[k], second[k])
		}
	}
	for _, k := range []string{"questions", "docs", "chunks", "oneshot_both_at_10", "agent_both_at_10", "agent_recall_at_5"} {
		if first[k] != second[k] {
			t.Errorf("%s: first run %v, second run %v", k, first[k], second[k])
		}
	}
	odd, _ := second["odd"].(map[string]any)
	even, _ := second["even"].(map[string]any)
	if odd["questions"] != 2.0 || even["questions"] != 1.0 {
		t.Errorf("splits: odd %v, even %v; want 2 and 1 questions", odd["questions"], even["questions"])
	}
	raw, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 3 {
		t.Errorf("per-question lines = %d, want 3", len(lines))
	}
	var ids []string
	for _, l := range lines {
		// every document the loop reported or ranked was returned by one of
		// its tools, so it is among those seen
		var q struct {
			ID        string   `json:"id"`
			Agent     []string `json:"agent"`
			Ranked    []string `json:"agent_unpruned"`
			Seen      []string `json:"seen"`
			Reasoning []string `json:"reasoning"`
		}
		if err := json.Unmarshal([]byte(l), &q); err != nil {
			t.Fatalf("per-question line %q: %v", l, err)
		}
		if len(q.Seen) == 0 || len(q.Reasoning) == 0 || q.Reasoning[0] == "" {
			t.Errorf("per-question line without the documents seen or the reasoning: %s", l)
		}
		ids = append(ids, q.ID)
		for _, id := range append(q.Agent, q.Ranked...) {
			if !slices.Contains(q.Seen, id) {
				t.Errorf("%s ranked or reported but not among the documents seen %v", id, q.Seen)
			}
		}
	}
	// --ids asks those questions alone; an id of no question is an error
	if one := run("--ids", ids[len(ids)-1]); one["questions"] != 1.0 {
		t.Errorf("--ids %s: %v questions, want 1", ids[len(ids)-1], one["questions"])
	}
	if code, _, stderr := runBench(t, "agent", "--embedder", "off", "--dataset", "testdata/hotpot", "--data-dir", data, "--ids", ids[0]+",no-such-question"); code != 1 || !strings.Contains(stderr, "no-such-question") {
		t.Errorf("--ids with an unknown id: exit %d, stderr %q; want 1 naming it", code, stderr)
	}
	evenOnly := run("--split", "even")
	if evenOnly["questions"] != 1.0 {
		t.Errorf("--split even: %v questions, want 1", evenOnly["questions"])
	}
	if code, _, _ := runBench(t, "agent", "--embedder", "off", "--dataset", "testdata/hotpot", "--split", "third"); code == 0 {
		t.Error("--split third: exit 0")
	}
}

// benchAgentJSON runs `capsuled bench agent --embedder off --json` with args
// and returns its result, the JSON of the last line of its output.
func benchAgentJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, stderr := runBench(t, append([]string{"agent", "--embedder", "off", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	return res
}

// runBench runs `capsuled bench ARGS` in process and returns its exit status
// (0, 1 on an error, 2 on a usage error) and output.
func runBench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := 0
	if err := Run(context.Background(), args, &out, &errb); errors.Is(err, cli.ErrUsage) {
		code = 2
	} else if err != nil {
		code = 1
		fmt.Fprintln(&errb, err)
	}
	return code, out.String(), errb.String()
}

// TestTwoWikiSetsErrors: a file that is not the 2WikiMultihopQA format is
// refused, saying why.
func TestTwoWikiSetsErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not JSON":                 `{`,
		"context entry":            `[{"_id":"a","question":"q?","context":[["t"]],"supporting_facts":[["t",0]]}]`,
		"supporting fact":          `[{"_id":"a","question":"q?","context":[["t",["s."]]],"supporting_facts":[[1]]}]`,
		"fact not in context":      `[{"_id":"a","question":"q?","context":[["t",["s."]]],"supporting_facts":[["u",0]]}]`,
		"no supported question":    `[{"_id":"a","question":"q?","context":[["t",["s."]]],"supporting_facts":[]}]`,
		"no such file (not found)": "",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		if body != "" {
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := twoWikiSets(path, 0, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

package agent_test

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"capsuled/internal/agent"
	"capsuled/internal/chat"
	"capsuled/internal/domain"
	"capsuled/internal/engine/builtin"
)

// TestHotpotQAPolicy measures the built-in policy through the agent loop over
// the in-memory BM25 backend against one-shot BM25 on the HotpotQA slice in
// ../shared/data/hotpotqa. It runs when CAPSULED_HOTPOT is set (to a number
// of questions, or "all").
func TestHotpotQAPolicy(t *testing.T) {
	n := os.Getenv("CAPSULED_HOTPOT")
	if n == "" {
		t.Skip("set CAPSULED_HOTPOT=all (or a number of questions) to run the policy benchmark")
	}
	shapeName := os.Getenv("CAPSULED_HOTPOT_SHAPE")
	mem, qs, qrels := hotpotData(t, shapeName)
	backend := newBM25MemoryBackend(mem)
	if k, err := strconv.Atoi(n); err == nil && k < len(qs) {
		qs = qs[:k]
	}
	// CAPSULED_ENGINE_CONFIG sets the engine's configuration, as JSON
	// ({"ReportCut": -1, "MaxTurns": 6}).
	var bcfg builtin.Config
	if v := os.Getenv("CAPSULED_ENGINE_CONFIG"); v != "" {
		if err := json.Unmarshal([]byte(v), &bcfg); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := chat.New(chat.Config{Engine: builtin.New(bcfg), Counter: chat.PreTokenCounter{}})
	if err != nil {
		t.Fatal(err)
	}
	var timed timedModel
	timed.m = agent.InProcess(svc)
	var one, ag metrics
	var half [2][2]metrics // odd, even: one-shot, agent
	turns, calls := 0, 0
	var sizes []int
	goldN, reportedGold, reported := 0, 0, 0
	ctx := context.Background()
	sort.Slice(qs, func(i, j int) bool { return qs[i][0] < qs[j][0] })
	num := 0
	for _, q := range qs {
		gold := qrels[q[0]]
		if len(gold) == 0 {
			continue
		}
		num++
		if sp := os.Getenv("CAPSULED_HOTPOT_SPLIT"); sp == "odd" && num%2 == 0 || sp == "even" && num%2 == 1 {
			continue // CAPSULED_HOTPOT_SPLIT=odd|even answers one half
		}
		h := &half[(num+1)%2]
		hits := backend.rank(q[1], 10)
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		one.add(ids, gold)
		h[0].add(ids, gold)
		res, err := agent.Run(ctx, &timed, backend, q[1], agent.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ag.add(res.IDs, gold)
		sizes = append(sizes, len(res.IDs))
		reported += len(res.IDs)
		for _, g := range gold {
			if slices.Contains(res.IDs, g) {
				reportedGold++
			}
		}
		goldN += len(gold)
		h[1].add(res.IDs, gold)
		turns += res.Turns
		calls += res.ToolCalls
	}
	shape := "hits with a title field"
	switch shapeName {
	case "bench":
		shape = `bench-shaped hits: no title, text "title text"`
	case "untitled":
		shape = "untitled hits: the text alone"
	}
	fmt.Printf("questions %d (in-memory BM25 backend over title+text; %s)\n", one.n, shape)
	fmt.Printf("oneshot: %s\nagent:   %s\n", one, ag)
	for i, name := range []string{"odd", "even"} {
		fmt.Printf("%s (%d): oneshot: %s\n%s agent:   %s\n", name, half[i][0].n, half[i][0], strings.Repeat(" ", len(name)), half[i][1])
	}
	sort.Ints(sizes)
	fmt.Printf("report size median %d p90 %d; report precision %.3f; recall of the reported list %.3f\n",
		sizes[len(sizes)/2], sizes[len(sizes)*9/10], float64(reportedGold)/float64(max(reported, 1)), float64(reportedGold)/float64(max(goldN, 1)))
	fmt.Printf("agent turns/question %.2f, tool calls/question %.2f, engine time per turn p50 %v\n",
		float64(turns)/float64(ag.n), float64(calls)/float64(ag.n), timed.p50())
}

// hotpotData reads the HotpotQA slice (CAPSULED_HOTPOT_DIR, default
// ../shared/data/hotpotqa from the repository root) as the backend's
// documents in the given shape, its queries (id, text) and its qrels; it
// skips when the set is not there.
func hotpotData(tb testing.TB, shapeName string) ([]memDoc, [][2]string, map[string][]string) {
	tb.Helper()
	dir := os.Getenv("CAPSULED_HOTPOT_DIR")
	if dir == "" {
		dir = "../../../shared/data/hotpotqa"
	}
	docs := readJSONL[struct{ ID, Title, Text string }](tb, filepath.Join(dir, "corpus.jsonl.gz"), func(m map[string]any) struct{ ID, Title, Text string } {
		return struct{ ID, Title, Text string }{m["_id"].(string), m["title"].(string), m["text"].(string)}
	})
	qs := readJSONL[[2]string](tb, filepath.Join(dir, "queries.jsonl.gz"), func(m map[string]any) [2]string {
		return [2]string{m["_id"].(string), m["text"].(string)}
	})
	qrels := map[string][]string{}
	raw, err := os.ReadFile(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 2 {
			continue
		}
		qrels[f[0]] = append(qrels[f[0]], f[1])
	}
	// shape "bench" gives the hits the shape the bench's capsule gives
	// them: no title, the text "title text"; "untitled" drops the title
	// altogether (the text alone, as document chunks have); "" keeps it in
	// the hit's title field.
	mem := make([]memDoc, len(docs))
	for i, d := range docs {
		switch shapeName {
		case "bench":
			mem[i] = memDoc{id: d.ID, text: d.Title + " " + d.Text}
		case "untitled":
			mem[i] = memDoc{id: d.ID, text: d.Text}
		default:
			mem[i] = memDoc{id: d.ID, title: d.Title, text: d.Text}
		}
	}
	return mem, qs, qrels
}

// BenchmarkHotpotTurn measures the built-in engine's own time per turn (as
// `capsuled bench agent`'s engine_turn_p50_ms does: the engine's Generate,
// no search) over the real conversations of the first 100 HotpotQA
// questions, run through the loop over the in-memory BM25 backend:
// bench-shaped hits (CAPSULED_HOTPOT_SHAPE=untitled for the text alone). It
// records every turn's messages once, then each iteration answers all of
// them again; it reports the mean and the median time per turn. It skips
// when the set is not in ../shared/data/hotpotqa (or CAPSULED_HOTPOT_DIR).
func BenchmarkHotpotTurn(b *testing.B) {
	shape := cmp.Or(os.Getenv("CAPSULED_HOTPOT_SHAPE"), "bench")
	mem, qs, _ := hotpotData(b, shape)
	backend := newBM25MemoryBackend(mem)
	sort.Slice(qs, func(i, j int) bool { return qs[i][0] < qs[j][0] })
	eng := builtin.New(builtin.Config{})
	var recorded [][]domain.Message
	rec := agent.ModelFunc(func(ctx context.Context, msgs []domain.Message) (domain.Choice, error) {
		recorded = append(recorded, slices.Clone(msgs))
		cs, _, err := eng.Generate(ctx, turnRequest(msgs))
		if err != nil {
			return domain.Choice{}, err
		}
		return cs[0], nil
	})
	ctx := context.Background()
	for _, q := range qs[:min(100, len(qs))] {
		if _, err := agent.Run(ctx, rec, backend, q[1], agent.Config{}); err != nil {
			b.Fatal(err)
		}
	}
	benchTurns(b, recorded)
}

type timedModel struct {
	m     agent.Model
	times []time.Duration
}

func (tm *timedModel) p50() time.Duration {
	if len(tm.times) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), tm.times...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

func (tm *timedModel) Turn(ctx context.Context, msgs []domainMessage) (domainChoice, error) {
	start := time.Now()
	c, err := tm.m.Turn(ctx, msgs)
	tm.times = append(tm.times, time.Since(start))
	return c, err
}

type metrics struct {
	n                        int
	r2, r5, r10, b2, b5, b10 float64
}

func (m *metrics) add(ids, gold []string) {
	m.n++
	at := func(k int) (float64, float64) {
		found := 0
		for _, g := range gold {
			for _, id := range ids[:min(k, len(ids))] {
				if id == g {
					found++
					break
				}
			}
		}
		both := 0.0
		if found == len(gold) {
			both = 1
		}
		return float64(found) / float64(len(gold)), both
	}
	r, b := at(2)
	m.r2, m.b2 = m.r2+r, m.b2+b
	r, b = at(5)
	m.r5, m.b5 = m.r5+r, m.b5+b
	r, b = at(10)
	m.r10, m.b10 = m.r10+r, m.b10+b
}

func (m metrics) String() string {
	n := float64(max(m.n, 1))
	return fmt.Sprintf("recall@2 %.3f recall@5 %.3f recall@10 %.3f both@2 %.3f both@5 %.3f both@10 %.3f",
		m.r2/n, m.r5/n, m.r10/n, m.b2/n, m.b5/n, m.b10/n)
}

func readJSONL[T any](t testing.TB, path string, conv func(map[string]any) T) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("dataset not here: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var out []T
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, conv(m))
	}
	return out
}

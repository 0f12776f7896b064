package agent_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"capsuled/internal/agent"
	"capsuled/internal/chat"
	"capsuled/internal/domain"
	"capsuled/internal/engine/builtin"
	"capsuled/internal/ingest"
	"capsuled/internal/ingest/chunk"
)

// mhragQuestion is one MultiHop-RAG question with evidence: its gold
// articles and their number (its hop count).
type mhragQuestion struct {
	id, text, kind string
	gold           []string
}

// mhragData reads the MultiHop-RAG folder (CAPSULED_MULTIHOP_DIR, default
// .cache/multihop-rag from the repository root; how to make it:
// docs/experiments/agent.md) as `capsuled bench agent --multihop-rag`
// ingests it: article i is document mh%04d, titled "title\nsource,
// date\n\nbody" or (untitled) the body alone; the questions with evidence,
// ids mh%04d in file order. The text is built as internal/bench's
// multiHopRAGSets builds it (kept in step by hand: importing internal/bench
// would pull the whole service into this package's tests). It skips when
// the folder is not there.
func mhragData(tb testing.TB, untitled bool) ([]memDoc, []mhragQuestion) {
	tb.Helper()
	dir := cmp.Or(os.Getenv("CAPSULED_MULTIHOP_DIR"), "../../.cache/multihop-rag")
	raw, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	if err != nil {
		tb.Skipf("MultiHop-RAG not here: %v", err)
	}
	var corpus []struct {
		Title       string `json:"title"`
		Source      string `json:"source"`
		PublishedAt string `json:"published_at"`
		URL         string `json:"url"`
		Body        string `json:"body"`
	}
	if err := json.Unmarshal(raw, &corpus); err != nil {
		tb.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(dir, "MultiHopRAG.json"))
	if err != nil {
		tb.Skipf("MultiHop-RAG not here: %v", err)
	}
	var qs []struct {
		Query    string `json:"query"`
		Type     string `json:"question_type"`
		Evidence []struct {
			URL string `json:"url"`
		} `json:"evidence_list"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		tb.Fatal(err)
	}
	ids := map[string]string{}
	docs := make([]memDoc, len(corpus))
	for i, a := range corpus {
		id := fmt.Sprintf("mh%04d", i)
		ids[a.URL] = id
		text := strings.TrimSpace(a.Body)
		if !untitled {
			byline := a.Source
			if len(a.PublishedAt) >= 10 {
				byline += ", " + a.PublishedAt[:10]
			}
			text = strings.TrimSpace(a.Title) + "\n" + strings.TrimSpace(byline) + "\n\n" + text
		}
		docs[i] = memDoc{id: id, text: text}
	}
	var out []mhragQuestion
	for i, q := range qs {
		var gold []string
		for _, e := range q.Evidence {
			if id := ids[e.URL]; id != "" && !slices.Contains(gold, id) {
				gold = append(gold, id)
			}
		}
		if len(gold) == 0 {
			continue
		}
		out = append(out, mhragQuestion{fmt.Sprintf("mh%04d", i), q.Query, strings.TrimSuffix(q.Type, "_query"), gold})
	}
	return docs, out
}

// chunkedBackend serves long documents as the capsule service does: each
// document is cut into chunks (internal/ingest/chunk, the service's
// chunker, with the chat service's pre-token counter standing for the
// model's tokenizer), the chunks are ranked by in-memory BM25, and a
// search returns each document once, with its best chunk as the hit's
// text (one chunk per item, as the bench's tools ask); read returns the
// whole document.
type chunkedBackend struct {
	chunks *bm25MemoryBackend
	item   map[string]string // chunk id → document id
	whole  map[string]string // document id → text
}

func newChunkedBackend(docs []memDoc) *chunkedBackend {
	b := &chunkedBackend{item: map[string]string{}, whole: map[string]string{}}
	var cs []memDoc
	for _, d := range docs {
		b.whole[d.id] = d.text
		doc := ingest.Document{MIMEType: "text/plain", Text: d.text, Blocks: ingest.ParagraphBlocks(d.text, nil)}
		for _, c := range chunk.Split(doc, chat.PreTokenCounter{}, chunk.Options{HeadingContext: true}) {
			id := fmt.Sprintf("%s#%d", d.id, c.Idx)
			b.item[id] = d.id
			cs = append(cs, memDoc{id: id, text: c.Text})
		}
	}
	b.chunks = newBM25MemoryBackend(cs)
	return b
}

func (b *chunkedBackend) rank(q string, limit int) []agent.Hit {
	var out []agent.Hit
	seen := map[string]bool{}
	for _, h := range b.chunks.rank(q, 40*limit) {
		id := b.item[h.ID]
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, agent.Hit{ID: id, Text: h.Text, Score: h.Score})
		if len(out) == limit {
			break
		}
	}
	return out
}

func (b *chunkedBackend) Search(_ context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.rank(q, limit), nil
}

func (b *chunkedBackend) TextSearch(_ context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.rank(q, limit), nil
}

func (b *chunkedBackend) Read(_ context.Context, id string) (string, error) { return b.whole[id], nil }

// mhragQuestions are the questions of one half (CAPSULED_MULTIHOP_SPLIT
// odd or even; all when unset) of the first CAPSULED_MULTIHOP_LIMIT
// (default 1200) questions with evidence, as `bench agent --limit 1200
// --split odd|even` takes them.
func mhragQuestions(qs []mhragQuestion) []mhragQuestion {
	limit := 1200
	if v := os.Getenv("CAPSULED_MULTIHOP_LIMIT"); v != "" {
		fmt.Sscan(v, &limit)
	}
	qs = qs[:min(limit, len(qs))]
	sp := os.Getenv("CAPSULED_MULTIHOP_SPLIT")
	var out []mhragQuestion
	for i, q := range qs {
		if sp == "odd" && i%2 == 1 || sp == "even" && i%2 == 0 {
			continue
		}
		out = append(out, q)
	}
	return out
}

// TestMultiHopRAGPolicy runs the built-in policy through the agent loop
// over the chunked in-memory BM25 backend on MultiHop-RAG (titled, or the
// body alone with CAPSULED_MULTIHOP_SHAPE=untitled) and prints, per
// question, the reported ids, and the figures per hop count against one
// BM25 search. It runs when CAPSULED_MULTIHOP is set; its output compared
// line by line shows whether a change of the engine changed a reply.
func TestMultiHopRAGPolicy(t *testing.T) {
	if os.Getenv("CAPSULED_MULTIHOP") == "" {
		t.Skip("set CAPSULED_MULTIHOP=1 to run the MultiHop-RAG policy harness")
	}
	docs, all := mhragData(t, os.Getenv("CAPSULED_MULTIHOP_SHAPE") == "untitled")
	backend := newChunkedBackend(docs)
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
	timed := timedModel{m: agent.InProcess(svc)}
	ctx := context.Background()
	type fig struct{ one, ag metrics }
	byHops := map[int]*fig{}
	var sizes []int
	for _, q := range mhragQuestions(all) {
		hits := backend.rank(q.text, 10)
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		res, err := agent.Run(ctx, &timed, backend, q.text, agent.Config{})
		if err != nil {
			t.Fatal(err)
		}
		f := byHops[len(q.gold)]
		if f == nil {
			f = &fig{}
			byHops[len(q.gold)] = f
		}
		f.one.add(ids, q.gold)
		f.ag.add(res.IDs, q.gold)
		sizes = append(sizes, len(res.IDs))
		fmt.Printf("%s %d %s\n", q.id, res.ToolCalls, strings.Join(res.IDs, ","))
	}
	hs := make([]int, 0, len(byHops))
	for h := range byHops {
		hs = append(hs, h)
	}
	sort.Ints(hs)
	for _, h := range hs {
		f := byHops[h]
		fmt.Printf("hops %d (%d): oneshot: %s\n         agent:   %s\n", h, f.one.n, f.one, f.ag)
	}
	sort.Ints(sizes)
	if len(sizes) > 0 {
		fmt.Printf("report size median %d p90 %d; engine time per turn p50 %v\n", sizes[len(sizes)/2], sizes[len(sizes)*9/10], timed.p50())
	}
}

// BenchmarkMultiHopTurn measures the built-in engine's own time per turn
// (the engine's Generate, no search; what `capsuled bench agent`'s
// engine_turn_p50_ms measures) over the conversations of the first 100
// MultiHop-RAG questions with evidence, run through the loop over the
// chunked in-memory BM25 backend: long news articles of about 16 chunks,
// ten of them a list (CAPSULED_MULTIHOP_SHAPE=untitled: the body alone).
// It records every turn's messages once, then each iteration answers all of
// them again; it reports the mean and the median time per turn. It skips
// when the set is not in .cache/multihop-rag (or CAPSULED_MULTIHOP_DIR).
func BenchmarkMultiHopTurn(b *testing.B) {
	docs, qs := mhragData(b, os.Getenv("CAPSULED_MULTIHOP_SHAPE") == "untitled")
	backend := newChunkedBackend(docs)
	eng := builtin.New(builtin.Config{})
	recorded := recordTurns(b, eng, backend, qs, 100)
	benchTurns(b, recorded)
}

// recordTurns runs the loop for the first n questions and returns the
// messages of every turn the engine answered.
func recordTurns(b *testing.B, eng *builtin.Engine, backend agent.Backend, qs []mhragQuestion, n int) [][]domain.Message {
	b.Helper()
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
	for _, q := range qs[:min(n, len(qs))] {
		if _, err := agent.Run(ctx, rec, backend, q.text, agent.Config{}); err != nil {
			b.Fatal(err)
		}
	}
	return recorded
}

// turnRequest is the request the chat service gives the engine for one
// turn of the loop.
func turnRequest(msgs []domain.Message) *domain.ChatRequest {
	return &domain.ChatRequest{Model: "svc-1", Messages: msgs, ToolStub: true, ToolChoice: domain.ToolChoice{Mode: domain.ToolChoiceAuto},
		N: 1, IncludeReasoning: true, ParallelToolCalls: true, AddGenerationPrompt: true}
}

// benchTurns answers every recorded turn again per iteration, in the order
// of the conversations, with a new engine each time (so that what the
// engine remembers across requests is what a loop's earlier turns left:
// no reply is answered from an earlier iteration), and reports
// the mean and median engine time per turn, and the process's CPU time
// per turn (user and system, from getrusage: on a loaded machine the
// wall-clock times grow with the load, the CPU time much less).
func benchTurns(b *testing.B, recorded [][]domain.Message) {
	ctx := context.Background()
	times := make([]time.Duration, len(recorded))
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		eng := builtin.New(builtin.Config{})
		for i, msgs := range recorded {
			t0 := time.Now()
			if _, _, err := eng.Generate(ctx, turnRequest(msgs)); err != nil {
				b.Fatal(err)
			}
			times[i] = time.Since(t0)
		}
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	slices.Sort(times)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*len(recorded)), "cpu-µs/turn")
	b.ReportMetric(float64(len(recorded)), "turns")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(recorded)), "µs/turn")
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs/turn")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

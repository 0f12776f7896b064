package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/embed/ort"
	"capsuled/internal/memory"
	"capsuled/internal/store/sqlite"
)

// runBenchMemory is `capsuled bench memory`: LoCoMo evidence recall of the
// memory selection against two baselines (the last N turns; dense only).
func runBenchMemory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench memory", stderr)
	dataset := fs.String("dataset", "", "LoCoMo JSON file (a list of conversations)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	onnxDir := fs.String("onnx-dir", ".cache/models/all-MiniLM-L6-v2", "folder of the ONNX embedding model and vocab.txt (empty or missing: keyword only, no dense baseline)")
	modelFile := fs.String("model-file", "", "model file in the ONNX folder (default model.onnx)")
	ortLib := fs.String("ort-lib", "", "path of libonnxruntime.so (default: well-known places)")
	budget := fs.Int("budget-tokens", 1000, "memory budget of the selection")
	maxConv := fs.Int("conversations", 0, "use only the first N conversations (0: all)")
	denseW := fs.Float64("dense-weight", 0, "weight of the dense ranking in the fusion (0: the service default)")
	recency := fs.Float64("recency-weight", 0, "recency bonus weight (0: the service default; negative: off)")
	alone := fs.Bool("index-alone", false, "index each turn without its neighbours (ablation)")
	window := fs.Int("index-window", 0, "turns on each side indexed with a turn (0: the service default)")
	ownRepeat := fs.Int("own-repeat", 0, "times a turn's own text is in its index text (0: the service default)")
	fusion := fs.String("fusion", "", "fusion of the retrievers: rrf or convex (empty: the service default)")
	speaker := fs.Float64("speaker-weight", 0, "bonus of a turn whose speaker the question names (0: the service default; negative: off)")
	penalty := fs.Float64("neighbour-penalty", 0, "score share a turn loses per higher-ranked turn of its index window (0: off, the service default)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dataset == "" {
		fmt.Fprintln(stderr, "capsuled bench memory: --dataset is required")
		return errUsage
	}
	convs, err := loadLocomo(*dataset)
	if err != nil {
		return err
	}
	if *maxConv > 0 && *maxConv < len(convs) {
		convs = convs[:*maxConv]
	}
	dir, err := os.MkdirTemp("", "capsuled-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"))
	if err != nil {
		return err
	}
	defer db.Close()

	var clock time.Time
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	deps := memory.Deps{Store: db.Memory(), Generators: []memory.Generator{memory.Extractive{}}, Log: log}
	embedderID := "none (keyword only)"
	if *onnxDir != "" {
		if _, err := os.Stat(filepath.Join(*onnxDir, "vocab.txt")); err == nil {
			e, err := ort.New(ctx, ort.Config{ModelDir: *onnxDir, ModelFile: *modelFile, ORTLibrary: *ortLib})
			if err != nil {
				fmt.Fprintf(stderr, "warning: no dense retrieval: %v\n", err)
			} else {
				defer e.Close()
				deps.Embedder, deps.Tokens, embedderID = e, e.Tokenizer(), e.ModelID()
			}
		} else {
			fmt.Fprintf(stderr, "warning: no model in %s: keyword only, no dense baseline\n", *onnxDir)
		}
	}
	svc, err := memory.New(memory.Config{BudgetTokens: *budget, IndexAlone: *alone, IndexWindow: *window, NeighbourPenalty: *penalty, OwnRepeat: *ownRepeat, SpeakerWeight: *speaker, Fusion: memory.Fusion(*fusion), RecencyWeight: *recency, DenseWeight: *denseW, Now: func() time.Time { return clock }}, deps)
	if err != nil {
		return err
	}

	res := memoryBenchResult{Dataset: *dataset, Embedder: embedderID, BudgetTokens: *budget}
	systems := []*benchSystem{{Name: "capsuled selection (hybrid)", mode: memory.Hybrid}, {Name: "baseline: last N turns", recent: true}}
	if deps.Embedder != nil {
		systems = append(systems, &benchSystem{Name: "baseline: dense only", mode: memory.DenseOnly})
	}
	systems = append(systems, &benchSystem{Name: "ablation: BM25 only", mode: memory.Keyword})
	ingestStart := time.Now()
	for _, c := range convs {
		ns := c.ID
		dia := map[string][]string{} // memory id → dia ids
		for _, s := range c.Sessions {
			clock = s.At
			msgs := make([]domain.Message, 0, len(s.Turns))
			var ids []string
			for _, t := range s.Turns {
				role := domain.RoleAssistant
				if t.Speaker == c.SpeakerA {
					role = domain.RoleUser
				}
				text := strings.TrimSpace(t.Text)
				if t.Caption != "" {
					text += " [shares a photo: " + t.Caption + "]"
				}
				if text == "" {
					continue
				}
				m := domain.TextMessage(role, text)
				m.Name = t.Speaker
				msgs = append(msgs, m)
				ids = append(ids, t.DiaID)
			}
			stored, _, err := svc.Persist(ctx, memory.PersistInput{Namespace: ns, Conversation: fmt.Sprintf("%s-s%d", ns, s.N), Messages: msgs, At: s.At})
			if err != nil {
				return fmt.Errorf("%s session %d: %w", ns, s.N, err)
			}
			for i, m := range stored {
				dia[m.ID] = append(dia[m.ID], ids[i])
				res.Turns++
			}
		}
		clock = c.Sessions[len(c.Sessions)-1].At.Add(24 * time.Hour)
		for _, q := range c.QA {
			if q.Category < 1 || q.Category > 4 {
				continue
			}
			evidence := q.evidence(c.diaIDs)
			if len(evidence) == 0 {
				continue
			}
			res.Questions++
			for _, sys := range systems {
				if err := sys.run(ctx, svc, db.Memory(), ns, q.Question, evidence, dia, clock); err != nil {
					return err
				}
			}
		}
	}
	res.Conversations = len(convs)
	res.IngestSeconds = time.Since(ingestStart).Seconds()
	for _, sys := range systems {
		res.Systems = append(res.Systems, sys.summary())
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "LoCoMo memory selection: %d conversations, %d turns, %d questions (categories 1-4), budget %d tokens, embedder %s\n\n",
		res.Conversations, res.Turns, res.Questions, res.BudgetTokens, res.Embedder)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tevidence_recall\tevidence_recall_at_5\tevidence_recall_at_10\tmean_injected_tokens\tmean_memories\tselection_p50_ms\tselection_p95_ms")
	for _, s := range res.Systems {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.0f\t%.1f\t%.2f\t%.2f\n", s.Name, s.EvidenceRecall, s.EvidenceRecallAt5, s.EvidenceRecallAt10,
			s.MeanInjectedTokens, s.MeanMemories, s.SelectionP50Ms, s.SelectionP95Ms)
	}
	return tw.Flush()
}

type memoryBenchResult struct {
	Dataset       string               `json:"dataset"`
	Embedder      string               `json:"embedder"`
	BudgetTokens  int                  `json:"budget_tokens"`
	Conversations int                  `json:"conversations"`
	Turns         int                  `json:"turns"`
	Questions     int                  `json:"questions"`
	IngestSeconds float64              `json:"total_seconds"`
	Systems       []benchSystemSummary `json:"systems"`
}

type benchSystemSummary struct {
	Name               string  `json:"name"`
	EvidenceRecall     float64 `json:"evidence_recall"`
	EvidenceRecallAt5  float64 `json:"evidence_recall_at_5"`
	EvidenceRecallAt10 float64 `json:"evidence_recall_at_10"`
	MeanInjectedTokens float64 `json:"mean_injected_tokens"`
	MeanMemories       float64 `json:"mean_memories"`
	SelectionP50Ms     float64 `json:"selection_p50_ms"`
	SelectionP95Ms     float64 `json:"selection_p95_ms"`
}

// benchSystem accumulates one system's figures.
type benchSystem struct {
	Name   string
	mode   memory.Mode
	recent bool // the last-N-turns baseline

	recall, at5, at10, tokens, mems float64
	n                               int
	lat                             []time.Duration
}

func (b *benchSystem) run(ctx context.Context, svc *memory.Service, st memory.Store, ns, question string, evidence map[string]bool, dia map[string][]string, now time.Time) error {
	start := time.Now()
	var sel memory.Selection
	var err error
	if b.recent {
		sel, err = recentSelection(ctx, svc, st, ns, now)
	} else {
		sel, err = svc.Select(ctx, memory.Query{Namespace: ns, Text: question, Mode: b.mode})
	}
	if err != nil {
		return err
	}
	b.lat = append(b.lat, time.Since(start))
	cover := func(list []memory.Selected) float64 {
		hit := map[string]bool{}
		for _, m := range list {
			for _, d := range dia[m.Memory.ID] {
				if evidence[d] {
					hit[d] = true
				}
			}
		}
		return float64(len(hit)) / float64(len(evidence))
	}
	b.recall += cover(sel.Packed)
	b.at5 += cover(sel.Ranked[:min(5, len(sel.Ranked))])
	b.at10 += cover(sel.Ranked[:min(10, len(sel.Ranked))])
	b.tokens += float64(sel.Tokens)
	b.mems += float64(len(sel.Packed))
	b.n++
	return nil
}

// recentSelection is the baseline that injects the newest turns, newest
// first, within the same budget.
func recentSelection(ctx context.Context, svc *memory.Service, st memory.Store, ns string, now time.Time) (memory.Selection, error) {
	mems, err := st.Recent(ctx, ns, domain.MemoryTurn, 200, memory.LiveFilter{Now: now})
	if err != nil {
		return memory.Selection{}, err
	}
	return svc.Pack(mems, 0), nil
}

func (b *benchSystem) summary() benchSystemSummary {
	n := float64(max(b.n, 1))
	sort.Slice(b.lat, func(i, j int) bool { return b.lat[i] < b.lat[j] })
	pct := func(p float64) float64 {
		if len(b.lat) == 0 {
			return 0
		}
		return float64(b.lat[int(p*float64(len(b.lat)-1))].Microseconds()) / 1000
	}
	return benchSystemSummary{Name: b.Name, EvidenceRecall: b.recall / n, EvidenceRecallAt5: b.at5 / n, EvidenceRecallAt10: b.at10 / n,
		MeanInjectedTokens: b.tokens / n, MeanMemories: b.mems / n, SelectionP50Ms: pct(0.5), SelectionP95Ms: pct(0.95)}
}

// --- LoCoMo

type locomoConv struct {
	ID       string
	SpeakerA string
	Sessions []locomoSession
	QA       []locomoQA
	diaIDs   map[string]bool
}

type locomoSession struct {
	N     int
	At    time.Time
	Turns []locomoTurn
}

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

var diaPattern = regexp.MustCompile(`D\d+:\d+`)

// evidence returns the question's evidence ids that name a turn (the data
// has a few that do not; see the dataset's README).
func (q locomoQA) evidence(known map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, e := range q.Evidence {
		for _, id := range diaPattern.FindAllString(e, -1) {
			if known[id] {
				out[id] = true
			}
		}
	}
	return out
}

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

func loadLocomo(path string) ([]locomoConv, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var items []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []locomoQA                 `json:"qa"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []locomoConv
	for _, it := range items {
		c := locomoConv{ID: it.SampleID, QA: it.QA, diaIDs: map[string]bool{}}
		_ = json.Unmarshal(it.Conversation["speaker_a"], &c.SpeakerA)
		for key, v := range it.Conversation {
			m := sessionKey.FindStringSubmatch(key)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			var turns []locomoTurn
			if err := json.Unmarshal(v, &turns); err != nil || len(turns) == 0 {
				continue
			}
			var when string
			_ = json.Unmarshal(it.Conversation[key+"_date_time"], &when)
			at, err := time.Parse("3:04 pm on 2 January, 2006", strings.TrimSpace(when))
			if err != nil {
				return nil, fmt.Errorf("%s %s: date %q: %w", it.SampleID, key, when, err)
			}
			for _, t := range turns {
				c.diaIDs[t.DiaID] = true
			}
			c.Sessions = append(c.Sessions, locomoSession{N: n, At: at, Turns: turns})
		}
		sort.Slice(c.Sessions, func(i, j int) bool { return c.Sessions[i].N < c.Sessions[j].N })
		if len(c.Sessions) == 0 {
			return nil, errors.New(it.SampleID + ": no sessions")
		}
		if err := domain.ValidateNamespace(c.ID); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

package bench

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"capsuled/internal/cli"
	"capsuled/internal/domain"
	"capsuled/internal/embed/ort"
	"capsuled/internal/memory"
	"capsuled/internal/store/sqlite"
)

// runMemory is `capsuled bench memory`: LoCoMo evidence recall of the
// memory selection against two baselines (the last N turns; dense only).
func runMemory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("bench memory", stderr)
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
	embedAlone := fs.Bool("embed-alone", false, "embed each turn by its own text, BM25 still indexing it with its neighbours")
	window := fs.Int("index-window", 0, "turns on each side indexed with a turn (0: the service default)")
	embedWindow := fs.Int("embed-window", 0, "turns on each side in the text a turn's vector is computed from (0: the service default)")
	embedOwn := fs.Int("embed-own-repeat", 0, "times a turn's own text is in the text its vector is computed from (0: the service default)")
	ownRepeat := fs.Int("own-repeat", 0, "times a turn's own text is in its index text (0: the service default)")
	fusion := fs.String("fusion", "", "fusion of the retrievers: rrf or convex (empty: the service default)")
	speaker := fs.Float64("speaker-weight", 0, "bonus of a turn whose speaker the question names (0: the service default; negative: off)")
	penalty := fs.Float64("neighbour-penalty", 0, "score share a turn loses per higher-ranked turn of its index window (0: off, the service default)")
	tuneN := fs.Int("tune-conversations", 4, "the first N conversations are the tuning split, the rest the held-out split (figures are reported for both)")
	only := fs.String("split", "all", "run only one split: all, tune or held-out")
	var variants variantFlag
	fs.Var(&variants, "variant", "an extra hybrid system on the same stored memories, NAME:key=value,... with selection settings (repeatable; keys: "+strings.Join(variantKeys(), ", ")+")")
	embedCache := fs.String("embed-cache", "", "file that keeps the vectors of texts embedded before (read at the start, written at the end), to rerun faster")
	dump := fs.String("dump", "", "write one JSON line per question with the rank of each evidence turn in every system's ranking to this file")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *dataset == "" {
		fmt.Fprintln(stderr, "capsuled bench memory: --dataset is required")
		return cli.ErrUsage
	}
	convs, err := loadLocomo(*dataset)
	if err != nil {
		return err
	}
	if *maxConv > 0 && *maxConv < len(convs) {
		convs = convs[:*maxConv]
	}
	for i := range convs {
		convs[i].Split = splitTune
		if i >= *tuneN {
			convs[i].Split = splitHeldOut
		}
	}
	switch *only {
	case "all":
	case splitTune, splitHeldOut:
		convs = slices.DeleteFunc(convs, func(c locomoConv) bool { return c.Split != *only })
	default:
		fmt.Fprintf(stderr, "capsuled bench memory: --split %q: want all, %s or %s\n", *only, splitTune, splitHeldOut)
		return cli.ErrUsage
	}
	if len(convs) == 0 {
		fmt.Fprintln(stderr, "capsuled bench memory: no conversation left to run")
		return cli.ErrUsage
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
				if *embedCache != "" {
					c, err := openEmbedCache(*embedCache, e)
					if err != nil {
						return err
					}
					defer func() {
						if err := c.save(); err != nil {
							fmt.Fprintf(stderr, "warning: embedding cache not saved: %v\n", err)
						}
					}()
					deps.Embedder = c
				}
			}
		} else {
			fmt.Fprintf(stderr, "warning: no model in %s: keyword only, no dense baseline\n", *onnxDir)
		}
	}
	cfg := memory.Config{BudgetTokens: *budget, IndexAlone: *alone, EmbedAlone: *embedAlone, IndexWindow: *window, NeighbourPenalty: *penalty, OwnRepeat: *ownRepeat, EmbedWindow: *embedWindow, EmbedOwnRepeat: *embedOwn, SpeakerWeight: *speaker, Fusion: memory.Fusion(*fusion), RecencyWeight: *recency, DenseWeight: *denseW, Now: func() time.Time { return clock }}
	svc, err := memory.New(cfg, deps)
	if err != nil {
		return err
	}

	res := memoryBenchResult{Dataset: *dataset, Embedder: embedderID, BudgetTokens: *budget}
	systems := []*benchSystem{{Name: "capsuled selection (hybrid)", mode: memory.Hybrid, svc: svc}, {Name: "baseline: last N turns", recent: true, svc: svc}}
	if deps.Embedder != nil {
		systems = append(systems, &benchSystem{Name: "baseline: dense only", mode: memory.DenseOnly, svc: svc})
	}
	systems = append(systems, &benchSystem{Name: "ablation: BM25 only", mode: memory.Keyword, svc: svc})
	for _, v := range variants {
		vc := cfg
		if err := applyVariant(&vc, v.settings); err != nil {
			fmt.Fprintf(stderr, "capsuled bench memory: --variant %s: %v\n", v.name, err)
			return cli.ErrUsage
		}
		vs, err := memory.New(vc, deps)
		if err != nil {
			return fmt.Errorf("variant %s: %w", v.name, err)
		}
		systems = append(systems, &benchSystem{Name: "variant: " + v.name, mode: memory.Hybrid, svc: vs})
	}
	var dumpEnc *json.Encoder
	if *dump != "" {
		f, err := os.Create(*dump)
		if err != nil {
			return err
		}
		defer f.Close()
		dumpEnc = json.NewEncoder(f)
	}
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
			line := dumpLine{Conversation: c.ID, Split: c.Split, Category: q.Category, Question: q.Question, Evidence: slices.Sorted(maps.Keys(evidence)), Ranks: map[string][]int{}, Top: map[string][]string{}}
			for _, sys := range systems {
				ranks, top, err := sys.run(ctx, db.Memory(), ns, c.Split, q, evidence, dia, clock)
				if err != nil {
					return err
				}
				line.Ranks[sys.Name], line.Top[sys.Name] = ranks, top
			}
			if dumpEnc != nil {
				if err := dumpEnc.Encode(line); err != nil {
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
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nevidence_recall_at_10 by split (questions) and by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):")
	tw = tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	var heads []string
	for _, k := range groupKeys(res.Systems) {
		heads = append(heads, fmt.Sprintf("%s (%d)", k, groupOf(res.Systems[0], k).Questions))
	}
	fmt.Fprintln(tw, "system\t"+strings.Join(heads, "\t"))
	for _, s := range res.Systems {
		var cells []string
		for _, k := range groupKeys(res.Systems) {
			cells = append(cells, fmt.Sprintf("%.3f", groupOf(s, k).EvidenceRecallAt10))
		}
		fmt.Fprintln(tw, s.Name+"\t"+strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// embedCache is an Embedder that remembers the vectors of the batches it
// embedded (stored turns), in a file, for --embed-cache.
type embedCache struct {
	memory.Embedder
	path  string
	mu    sync.Mutex
	vecs  map[string][]float32
	dirty bool
}

func openEmbedCache(path string, e memory.Embedder) (*embedCache, error) {
	c := &embedCache{Embedder: e, path: path, vecs: map[string][]float32{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var stored struct {
		Model string
		Vecs  map[string][]float32
	}
	if err := gob.NewDecoder(f).Decode(&stored); err != nil {
		return nil, fmt.Errorf("embedding cache %s: %w", path, err)
	}
	if stored.Model == e.ModelID() {
		c.vecs = stored.Vecs
	}
	return c, nil
}

// Embed returns the remembered vectors and embeds the rest. A single text
// (a query) is always embedded, so selection latencies stay true.
func (c *embedCache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 1 {
		return c.Embedder.Embed(ctx, texts)
	}
	out := make([][]float32, len(texts))
	var miss []string
	var at []int
	c.mu.Lock()
	for i, t := range texts {
		if v, ok := c.vecs[t]; ok {
			out[i] = v
		} else {
			miss, at = append(miss, t), append(at, i)
		}
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	vecs, err := c.Embedder.Embed(ctx, miss)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, v := range vecs {
		out[at[j]] = v
		c.vecs[miss[j]] = v
		c.dirty = true
	}
	return out, nil
}

func (c *embedCache) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(struct {
		Model string
		Vecs  map[string][]float32
	}{c.Embedder.ModelID(), c.vecs}); err != nil {
		return err
	}
	return os.WriteFile(c.path, buf.Bytes(), 0o644)
}

// The splits of the conversations: the first --tune-conversations are for
// tuning settings, the rest are held out to check them.
const (
	splitTune    = "tune"
	splitHeldOut = "held-out"
)

// groupKeys are the split and category columns of the text output.
func groupKeys(systems []benchSystemSummary) []string {
	var keys []string
	for _, k := range []string{splitTune, splitHeldOut} {
		if len(systems) > 0 && systems[0].Splits[k].Questions > 0 {
			keys = append(keys, k)
		}
	}
	for _, k := range []string{"1", "2", "3", "4"} {
		if len(systems) > 0 && systems[0].Categories[k].Questions > 0 {
			keys = append(keys, "cat "+k)
		}
	}
	return keys
}

func groupOf(s benchSystemSummary, key string) recallSet {
	if c, ok := strings.CutPrefix(key, "cat "); ok {
		return s.Categories[c]
	}
	return s.Splits[key]
}

// dumpLine is one question of --dump: the 1-based rank of each evidence
// turn in each system's ranking (0: not ranked).
type dumpLine struct {
	Conversation string           `json:"conversation"`
	Split        string           `json:"split"`
	Category     int              `json:"category"`
	Question     string           `json:"question"`
	Evidence     []string         `json:"evidence"`
	Ranks        map[string][]int `json:"ranks"`
	// Top are the turns (dia ids) of each system's first ten.
	Top map[string][]string `json:"top"`
}

// A variant is an extra hybrid system: a name and selection settings.
type variant struct{ name, settings string }

type variantFlag []variant

func (v *variantFlag) String() string {
	var out []string
	for _, x := range *v {
		out = append(out, x.name+":"+x.settings)
	}
	return strings.Join(out, " ")
}

func (v *variantFlag) Set(s string) error {
	name, settings, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want NAME:key=value,..., got %q", s)
	}
	if err := applyVariant(&memory.Config{}, settings); err != nil {
		return err
	}
	*v = append(*v, variant{strings.TrimSpace(name), settings})
	return nil
}

// variantSetters are the selection settings a --variant can change (the
// ones read at selection time: the stored index text is the run's).
var variantSetters = map[string]func(c *memory.Config, v string) error{
	"dense-weight":      floatSetter(func(c *memory.Config) *float64 { return &c.DenseWeight }),
	"recency-weight":    floatSetter(func(c *memory.Config) *float64 { return &c.RecencyWeight }),
	"speaker-weight":    floatSetter(func(c *memory.Config) *float64 { return &c.SpeakerWeight }),
	"neighbour-penalty": floatSetter(func(c *memory.Config) *float64 { return &c.NeighbourPenalty }),
	"date-weight":       floatSetter(func(c *memory.Config) *float64 { return &c.DateWeight }),
	"feedback-weight":   floatSetter(func(c *memory.Config) *float64 { return &c.FeedbackWeight }),
	"candidates": func(c *memory.Config, v string) error {
		n, err := strconv.Atoi(v)
		c.Candidates = n
		return err
	},
	"fusion": func(c *memory.Config, v string) error {
		c.Fusion = memory.Fusion(v)
		return nil
	},
}

func floatSetter(field func(*memory.Config) *float64) func(*memory.Config, string) error {
	return func(c *memory.Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		*field(c) = f
		return err
	}
}

func variantKeys() []string { return slices.Sorted(maps.Keys(variantSetters)) }

// applyVariant sets the key=value pairs of settings (comma-separated) on c.
func applyVariant(c *memory.Config, settings string) error {
	for _, kv := range strings.Split(settings, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		set := variantSetters[strings.TrimSpace(k)]
		if !ok || set == nil {
			return fmt.Errorf("setting %q: want key=value with a key of %s", kv, strings.Join(variantKeys(), ", "))
		}
		if err := set(c, strings.TrimSpace(v)); err != nil {
			return fmt.Errorf("setting %q: %w", kv, err)
		}
	}
	return nil
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
	// Splits and Categories are the recall figures of the tuning and
	// held-out conversations and of each question category.
	Splits     map[string]recallSet `json:"splits"`
	Categories map[string]recallSet `json:"categories"`
}

// recallSet is the recall of one group of questions.
type recallSet struct {
	Questions          int     `json:"questions"`
	EvidenceRecall     float64 `json:"evidence_recall"`
	EvidenceRecallAt5  float64 `json:"evidence_recall_at_5"`
	EvidenceRecallAt10 float64 `json:"evidence_recall_at_10"`
}

// add counts one question's figures (sums; mean divides them).
func (r *recallSet) add(recall, at5, at10 float64) {
	r.Questions++
	r.EvidenceRecall += recall
	r.EvidenceRecallAt5 += at5
	r.EvidenceRecallAt10 += at10
}

func (r recallSet) mean() recallSet {
	n := float64(max(r.Questions, 1))
	return recallSet{Questions: r.Questions, EvidenceRecall: r.EvidenceRecall / n, EvidenceRecallAt5: r.EvidenceRecallAt5 / n, EvidenceRecallAt10: r.EvidenceRecallAt10 / n}
}

// benchSystem accumulates one system's figures.
type benchSystem struct {
	Name   string
	mode   memory.Mode
	recent bool // the last-N-turns baseline
	svc    *memory.Service

	recall, at5, at10, tokens, mems float64
	n                               int
	lat                             []time.Duration
	splits, cats                    map[string]*recallSet
}

// run selects for one question, counts its figures and returns the 1-based
// rank of each evidence turn (in the order of the sorted evidence ids; 0
// when not ranked) and the turns of the first ten.
func (b *benchSystem) run(ctx context.Context, st memory.Store, ns, split string, q locomoQA, evidence map[string]bool, dia map[string][]string, now time.Time) ([]int, []string, error) {
	start := time.Now()
	var sel memory.Selection
	var err error
	if b.recent {
		sel, err = recentSelection(ctx, b.svc, st, ns, now)
	} else {
		sel, err = b.svc.Select(ctx, memory.Query{Namespace: ns, Text: q.Question, Mode: b.mode})
	}
	if err != nil {
		return nil, nil, err
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
	recall, at5, at10 := cover(sel.Packed), cover(sel.Ranked[:min(5, len(sel.Ranked))]), cover(sel.Ranked[:min(10, len(sel.Ranked))])
	b.recall += recall
	b.at5 += at5
	b.at10 += at10
	b.tokens += float64(sel.Tokens)
	b.mems += float64(len(sel.Packed))
	b.n++
	if b.splits == nil {
		b.splits, b.cats = map[string]*recallSet{}, map[string]*recallSet{}
	}
	group(b.splits, split).add(recall, at5, at10)
	group(b.cats, strconv.Itoa(q.Category)).add(recall, at5, at10)
	ids := slices.Sorted(maps.Keys(evidence))
	ranks := make([]int, len(ids))
	var top []string
	for r, m := range sel.Ranked {
		for _, d := range dia[m.Memory.ID] {
			if i := slices.Index(ids, d); i >= 0 && ranks[i] == 0 {
				ranks[i] = r + 1
			}
			if r < 10 {
				top = append(top, d)
			}
		}
	}
	return ranks, top, nil
}

func group(m map[string]*recallSet, key string) *recallSet {
	if m[key] == nil {
		m[key] = &recallSet{}
	}
	return m[key]
}

// recentSelection is the baseline that injects the newest turns, newest
// first, within the same budget.
func recentSelection(ctx context.Context, svc *memory.Service, st memory.Store, ns string, now time.Time) (memory.Selection, error) {
	mems, err := st.Recent(ctx, ns, domain.MemoryTurn, 200, domain.LiveFilter{Now: now})
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
	means := func(m map[string]*recallSet) map[string]recallSet {
		out := map[string]recallSet{}
		for k, r := range m {
			out[k] = r.mean()
		}
		return out
	}
	return benchSystemSummary{Name: b.Name, EvidenceRecall: b.recall / n, EvidenceRecallAt5: b.at5 / n, EvidenceRecallAt10: b.at10 / n,
		MeanInjectedTokens: b.tokens / n, MeanMemories: b.mems / n, SelectionP50Ms: pct(0.5), SelectionP95Ms: pct(0.95),
		Splits: means(b.splits), Categories: means(b.cats)}
}

// --- LoCoMo

type locomoConv struct {
	ID       string
	Split    string // splitTune or splitHeldOut
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

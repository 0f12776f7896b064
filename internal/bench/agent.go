package bench

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"capsuled/api"
	"capsuled/gen"
	"capsuled/internal/agent"
	"capsuled/internal/apiclient"
	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/chat"
	"capsuled/internal/cli"
	"capsuled/internal/domain"
	"capsuled/internal/embed/ort"
	"capsuled/internal/engine/builtin"
	"capsuled/internal/store/sqlite"
	"capsuled/internal/toolcall"
)

// runAgent is `capsuled bench agent`: it ingests a multi-hop set into
// fresh capsules through the capsule service, serves the real API on
// 127.0.0.1:0, and answers every question twice: one-shot hybrid search
// through the query API, and svc-1's full loop over HTTP with the official
// OpenAI Go SDK as the chat client and the tools run against the query API
// (as `capsuled ask` does).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("bench agent", stderr)
	dataset := fs.String("dataset", "", "HotpotQA folder in BEIR layout (corpus.jsonl.gz, queries.jsonl.gz, qrels/test.tsv)")
	locomo := fs.String("locomo", "", "LoCoMo JSON file instead: category-1 questions over each conversation's turns")
	twoWiki := fs.String("2wiki", "", "2WikiMultihopQA JSON file instead (its dev set's format: context, supporting_facts, type): every question over\n"+
		"the passages of all questions' contexts; the figures per hop count (gold passages) come with it")
	mhrag := fs.String("multihop-rag", "", "MultiHop-RAG folder instead (corpus.json and MultiHopRAG.json): every question with evidence over the 609 news\n"+
		"articles, one item each (chunked); gold: the articles its evidence comes from, whose number is its hop count")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line")
	limit := fs.Int("limit", 0, "answer only the first N questions (0: all); HotpotQA then ingests their passages and fills up to 10 per question with others")
	embedder := fs.String("embedder", "onnx", "onnx (the real model) or off (keyword search only: hybrid is BM25 alone; for smoke tests)")
	onnxDir := fs.String("onnx-dir", "", "folder of the ONNX model (env CAPSULED_ONNX_DIR)")
	modelFile := fs.String("model-file", "", "model file in the folder (default model.onnx)")
	ortLib := fs.String("ort-lib", "", "libonnxruntime.so (env CAPSULED_ORT_LIB)")
	maxTurns := fs.Int("max-turns", 8, "turn limit of the loop (0: no loop, the one-shot query only; its figures alone)")
	workers := fs.Int("ingest-workers", capsule.DefaultWorkers, "ingestion jobs worked at once (one item each; their embedder calls are batched together)")
	dataDir := fs.String("data-dir", "", "keep the bench's database in DIR and reuse it: a second run over the same set finds its items ready\n"+
		"and skips ingestion (command line only; CAPSULED_DATA_DIR, the server's, is never used; one folder per set and --limit).\n"+
		"Default: a temporary folder, removed")
	split := fs.String("split", "all", "answer all questions, or only the odd- or even-numbered ones (1st, 3rd, … by sorted id): all, odd or even")
	cacheFile := fs.String("search-cache", "", "remember every search's result in FILE and answer it from there on the next run (for iterating on the\n"+
		"policy over one --data-dir; latencies then leave the searches out, so never report them from such a run)")
	perQuestion := fs.String("per-question", "", "write one JSON line per question to FILE (gold ids, one-shot and agent rankings, every id the loop's tools\n"+
		"returned, the reasoning of each turn)")
	onlyIDs := fs.String("ids", "", "ask only the questions of these ids (comma-separated, as --per-question writes them; the corpus and the\n"+
		"odd/even halves stay those of the whole set)")
	untitled := fs.Bool("untitled", false, "HotpotQA, 2WikiMultihopQA and MultiHop-RAG: ingest each passage's text without its title (file_name stays empty), as document chunks\n"+
		"and notes come; the capsule is then hotpotqa-untitled")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	only := map[string]bool{}
	for _, id := range strings.Split(*onlyIDs, ",") {
		if id = strings.TrimSpace(id); id != "" {
			only[id] = true
		}
	}
	if *split != "all" && *split != "odd" && *split != "even" {
		return fmt.Errorf("--split %q: want all, odd or even", *split)
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if !explicit["data-dir"] {
		*dataDir = ""
	}
	if given := btoi(*dataset != "") + btoi(*locomo != "") + btoi(*twoWiki != "") + btoi(*mhrag != ""); given != 1 {
		return errors.New("give one of --dataset (HotpotQA), --locomo, --2wiki or --multihop-rag")
	}
	var sets []benchSet
	var err error
	switch {
	case *dataset != "":
		sets, err = hotpotSets(*dataset, *limit, *untitled)
	case *twoWiki != "":
		sets, err = twoWikiSets(*twoWiki, *limit, *untitled)
	case *mhrag != "":
		sets, err = multiHopRAGSets(*mhrag, *limit, *untitled)
	default:
		sets, err = locomoSets(*locomo, *limit)
	}
	if err != nil {
		return err
	}
	if len(only) > 0 {
		known := map[string]bool{}
		for _, set := range sets {
			for _, q := range set.questions {
				known[q.id] = true
			}
		}
		var unknown []string
		for id := range only {
			if !known[id] {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return fmt.Errorf("--ids: no question %s in the set", strings.Join(unknown, ", "))
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "capsuled-bench-agent-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "capsuled.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	ccfg := capsule.Config{Store: db.Capsules(), DataDir: dir, Workers: *workers, Log: log}
	var counter chat.TokenCounter = chat.PreTokenCounter{}
	modelID := "none (keyword only)"
	switch *embedder {
	case "onnx":
		if *onnxDir == "" {
			return errors.New("--onnx-dir (or CAPSULED_ONNX_DIR) is required with --embedder onnx")
		}
		emb, err := ort.New(ctx, ort.Config{ModelDir: *onnxDir, ModelFile: *modelFile, ORTLibrary: *ortLib})
		if err != nil {
			return err
		}
		defer emb.Close()
		ccfg.Embedder, ccfg.Tokens, counter, modelID = emb, emb.Tokenizer(), emb.Tokenizer(), emb.ModelID()
	case "off":
	default:
		return fmt.Errorf("--embedder %q: want onnx or off", *embedder)
	}
	svc, err := capsule.New(ccfg)
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Close()

	eng := &timedEngine{Engine: builtin.New(builtin.Config{}), unpruned: builtin.New(builtin.Config{ReportCut: -1}), full: map[string][]string{}}
	chatSvc, err := chat.New(chat.Config{Engine: eng, Counter: counter})
	if err != nil {
		return err
	}
	cache, err := loadSearchCache(*cacheFile)
	if err != nil {
		return err
	}
	var pq io.Writer
	if *perQuestion != "" {
		f, err := os.Create(*perQuestion)
		if err != nil {
			return err
		}
		defer f.Close()
		pq = f
	}
	url, key, stop, err := serveBenchAPI(ctx, db, svc, chatSvc, log)
	if err != nil {
		return err
	}
	defer stop()
	client, err := apiclient.New(url, key, time.Minute)
	if err != nil {
		return err
	}
	model := apiclient.SDKModel(url, key)

	var st benchStats
	splits := map[string]*benchStats{"odd": {}, "even": {}}
	docs, chunks := 0, 0
	qn := 0 // 1-based number of the question over all sets
	var ingest time.Duration
	reused := false // a set was found ready in the kept --data-dir: ingest_s is no ingestion time
	for _, set := range sets {
		t0 := time.Now()
		uri, ready, err := ingestSet(ctx, svc, set)
		if err != nil {
			return err
		}
		reused = reused || ready
		ingest += time.Since(t0)
		c, err := svc.GetCapsule(ctx, set.capsule)
		if err != nil {
			return err
		}
		docs, chunks = docs+len(set.docs), chunks+c.ChunkCount
		verb := "ingested"
		if ready {
			verb = "found ready in --data-dir"
		}
		fmt.Fprintf(stderr, "%s: %s %d documents (%d chunks) in %s; asking %d questions\n",
			set.capsule, verb, len(set.docs), c.ChunkCount, time.Since(t0).Round(time.Millisecond), len(set.questions))
		var backend agent.Backend = &apiclient.Backend{Client: client, Capsule: set.capsule}
		if cache != nil {
			backend = &cachedBackend{b: backend, c: cache, capsule: set.capsule}
		}
		for i, q := range set.questions {
			qn++
			half := "even"
			if qn%2 == 1 {
				half = "odd"
			}
			if *split != "all" && half != *split || len(only) > 0 && !only[q.id] {
				continue
			}
			ans, err := st.ask(ctx, client, backend, cache, model, set.capsule, q, uri, *maxTurns, eng.unprunedFor)
			if err != nil {
				return fmt.Errorf("%s question %s: %w", set.capsule, q.id, err)
			}
			splits[half].add(q, ans)
			if pq != nil {
				b, _ := json.Marshal(map[string]any{"id": q.id, "split": half, "kind": q.kind, "question": q.text, "gold": q.rel,
					"oneshot": ans.oneshot, "agent": ans.agent, "agent_unpruned": ans.ranked, "seen": seenIDs(ans.res, uri),
					"reasoning": reasoning(ans.res),
					"turns":     ans.res.Turns, "tool_calls": ans.res.ToolCalls})
				fmt.Fprintln(pq, string(b))
			}
			if (i+1)%100 == 0 {
				fmt.Fprintf(stderr, "  %d/%d questions\n", i+1, len(set.questions))
			}
		}
	}
	if err := cache.save(); err != nil {
		return err
	}
	res := st.summary()
	if cache != nil {
		res["search_cache"] = cache.path
	}
	res["dataset"] = sets[0].name
	res["docs"], res["chunks"], res["model"], res["cpus"] = docs, chunks, modelID, runtime.NumCPU()
	res["ingest_s"] = round4(ingest.Seconds())
	if reused {
		res["ingest_reused"] = true
	}
	res["engine_turn_p50_ms"] = pct(eng.turns(), 50)
	res["split"] = *split
	for half, hs := range splits {
		if hs.n > 0 && *split == "all" {
			sub := hs.summary()
			for k := range sub { // latencies are the whole run's
				if strings.Contains(k, "latency") {
					delete(sub, k)
				}
			}
			res[half] = sub
		}
	}
	if *maxTurns <= 0 {
		oneShotOnly(res)
	}
	printAgentBench(stdout, res)
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}

// A benchSet is one capsule's documents and the questions asked over it.
type benchSet struct {
	name, capsule string
	docs          []beirDoc
	questions     []benchQuestion
}

type benchQuestion struct {
	id, text, kind string
	rel            map[string]int // relevant document ids
	hops           int            // gold passages to find, when the set says (0: it does not)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hotpotSets reads a HotpotQA folder in BEIR layout; each passage is
// title + " " + text.
func hotpotSets(dir string, limit int, untitled bool) ([]benchSet, error) {
	queries, err := readBEIRQueries(filepath.Join(dir, "queries.jsonl.gz"))
	if err != nil {
		return nil, err
	}
	kinds := map[string]string{}
	err = readJSONLGz(filepath.Join(dir, "queries.jsonl.gz"), func(line []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		kinds[q.ID] = q.Type
		return nil
	})
	if err != nil {
		return nil, err
	}
	qrels, err := readQrels(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		return nil, err
	}
	var qids []string
	for id := range qrels {
		if _, ok := queries[id]; ok {
			qids = append(qids, id)
		}
	}
	sort.Strings(qids)
	if limit > 0 && limit < len(qids) {
		for _, id := range qids[limit:] {
			delete(qrels, id)
		}
		qids = qids[:limit]
	} else {
		limit = 0
	}
	corpus, err := readBEIRCorpus(filepath.Join(dir, "corpus.jsonl.gz"), 10*limit, qrels)
	if err != nil {
		return nil, err
	}
	for i := range corpus { // readBEIRCorpus joins title and text with a blank line
		if untitled {
			if _, text, ok := strings.Cut(corpus[i].text, "\n\n"); ok {
				corpus[i].text = text
			}
			continue
		}
		corpus[i].text = strings.Replace(corpus[i].text, "\n\n", " ", 1)
	}
	set := benchSet{name: "hotpotqa", capsule: "hotpotqa", docs: corpus}
	if untitled {
		set.name, set.capsule = "hotpotqa-untitled", "hotpotqa-untitled"
	}
	for _, id := range qids {
		set.questions = append(set.questions, benchQuestion{id: id, text: queries[id], kind: kinds[id], rel: qrels[id]})
	}
	if len(set.questions) == 0 {
		return nil, fmt.Errorf("%s: no questions with qrels", dir)
	}
	return []benchSet{set}, nil
}

// twoWikiSets reads a 2WikiMultihopQA file (a JSON array in the format of
// its dev set: _id, type, question, context as [title, sentences] pairs,
// supporting_facts as [title, sentence] pairs): one capsule holds the
// passages of every question's context, one per title (its sentences joined
// by spaces, after the title and a space unless untitled), and each
// question's relevant passages are those its supporting facts name; its
// hop count is their number (2 for comparison, compositional and inference
// questions, 4 for bridge-comparison ones).
func twoWikiSets(path string, limit int, untitled bool) ([]benchSet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []struct {
		ID       string            `json:"_id"`
		Type     string            `json:"type"`
		Question string            `json:"question"`
		Context  []json.RawMessage `json:"context"`
		Support  []json.RawMessage `json:"supporting_facts"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].ID < qs[j].ID })
	if limit > 0 && limit < len(qs) {
		qs = qs[:limit]
	}
	name := "2wiki"
	if untitled {
		name = "2wiki-untitled"
	}
	set := benchSet{name: name, capsule: name}
	ids := map[string]string{} // title → passage id
	for _, q := range qs {
		for _, c := range q.Context {
			var pair []json.RawMessage
			var title string
			var sents []string
			if json.Unmarshal(c, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &title) != nil || json.Unmarshal(pair[1], &sents) != nil {
				return nil, fmt.Errorf("%s: question %s: a context entry is not [title, [sentences]]", path, q.ID)
			}
			if _, ok := ids[title]; ok || title == "" {
				continue
			}
			id := fmt.Sprintf("2w%05d", len(ids))
			ids[title] = id
			text := strings.Join(strings.Fields(strings.Join(sents, " ")), " ")
			if !untitled {
				text = title + " " + text
			}
			set.docs = append(set.docs, beirDoc{id, text})
		}
		rel := map[string]int{}
		for _, f := range q.Support {
			var pair []json.RawMessage
			var title string
			if json.Unmarshal(f, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &title) != nil {
				return nil, fmt.Errorf("%s: question %s: a supporting fact is not [title, sentence]", path, q.ID)
			}
			id, ok := ids[title]
			if !ok {
				return nil, fmt.Errorf("%s: question %s: supporting fact %q is not in its context", path, q.ID, title)
			}
			rel[id] = 1
		}
		if len(rel) == 0 {
			continue
		}
		set.questions = append(set.questions, benchQuestion{id: q.ID, text: q.Question, kind: q.Type, rel: rel, hops: len(rel)})
	}
	if len(set.questions) == 0 {
		return nil, fmt.Errorf("%s: no questions with supporting facts", path)
	}
	return []benchSet{set}, nil
}

// locomoSets reads a LoCoMo file: one capsule per conversation, each turn a
// document ("speaker: text", with the shared image's caption), and the
// category-1 (multi-hop) questions with their evidence turns as relevant.
func locomoSets(path string, limit int) ([]benchSet, error) {
	convs, err := loadLocomo(path)
	if err != nil {
		return nil, err
	}
	var out []benchSet
	n := 0
	for _, c := range convs {
		set := benchSet{name: "locomo", capsule: "locomo-" + strings.ToLower(c.ID)}
		for _, qa := range c.QA {
			ev := qa.evidence(c.diaIDs)
			if qa.Category != 1 || len(ev) == 0 || (limit > 0 && n >= limit) {
				continue
			}
			rel := map[string]int{}
			for id := range ev {
				rel[id] = 1
			}
			n++
			set.questions = append(set.questions, benchQuestion{id: fmt.Sprintf("%s/%d", c.ID, len(set.questions)), text: qa.Question, kind: "multi-hop", rel: rel})
		}
		if len(set.questions) == 0 {
			continue
		}
		for _, s := range c.Sessions {
			for _, t := range s.Turns {
				text := t.Speaker + ": " + t.Text
				if t.Caption != "" {
					text += " [shares a photo: " + t.Caption + "]"
				}
				set.docs = append(set.docs, beirDoc{t.DiaID, text})
			}
		}
		out = append(out, set)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no category-1 questions with evidence", path)
	}
	return out, nil
}

// ingestSet creates the set's capsule, adds every document (URI = its id)
// and waits until all are ready. It returns item id → document id, and
// whether every document was already there and ready (a kept --data-dir).
func ingestSet(ctx context.Context, svc *capsule.Service, set benchSet) (map[string]string, bool, error) {
	if _, err := svc.CreateCapsule(ctx, set.capsule, "bench agent: "+set.name); err != nil {
		// a kept --data-dir: the capsule is there, and adding a document
		// again with the same URI and text leaves its item as it is
		if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindConflict {
			return nil, false, err
		}
		if uri, err := readySet(ctx, svc, set); err != nil || uri != nil {
			return uri, uri != nil, err
		}
	}
	uri := map[string]string{}
	var ids []string
	for _, d := range set.docs {
		it, _, err := svc.AddItem(ctx, set.capsule, capsule.NewItem{Kind: domain.ItemText, Text: d.text, URI: d.id})
		if err != nil {
			return nil, false, err
		}
		uri[it.ID] = d.id
		ids = append(ids, it.ID)
	}
	for _, id := range ids {
		it, err := svc.WaitItem(ctx, set.capsule, id, time.Hour)
		if err != nil {
			return nil, false, err
		}
		if it.Status != domain.StatusReady {
			return nil, false, fmt.Errorf("item %s (%s): %s %s", id, uri[id], it.Status, it.Error)
		}
	}
	return uri, false, nil
}

// readySet returns item id → document id when the capsule (of a kept
// --data-dir) already holds every document of the set as a ready item, and
// nil when it does not.
func readySet(ctx context.Context, svc *capsule.Service, set benchSet) (map[string]string, error) {
	byURI := map[string]string{}
	after := ""
	for {
		items, next, err := svc.ListItems(ctx, set.capsule, domain.StatusReady, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			byURI[it.URI] = it.ID
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(byURI) != len(set.docs) {
		return nil, nil
	}
	uri := make(map[string]string, len(set.docs))
	for _, d := range set.docs {
		id, ok := byURI[d.id]
		if !ok {
			return nil, nil
		}
		uri[id] = d.id
	}
	return uri, nil
}

// serveBenchAPI serves the API (capsules and svc-1) on 127.0.0.1:0 with an
// admin key.
func serveBenchAPI(ctx context.Context, db *sqlite.DB, svc *capsule.Service, chatSvc *chat.Service, log *slog.Logger) (string, string, func(), error) {
	au := auth.New(db.Keys(), time.Now, log)
	key, _, err := au.EnsureAdminKey(ctx)
	if err != nil {
		return "", "", nil, err
	}
	if key == "" { // a kept --data-dir: its first run's key cannot be read back
		if _, key, err = au.CreateKey(ctx, auth.NewKey{Name: "bench agent", Scopes: []domain.Scope{domain.ScopeAdmin}}); err != nil {
			return "", "", nil, err
		}
	}
	spec, err := api.LoadSpec(ctx)
	if err != nil {
		return "", "", nil, err
	}
	srv, err := api.NewServer(api.Config{}, spec, api.Deps{
		Auth: au, Capsules: svc, Chat: chatSvc,
		Models: []api.Model{{ID: chat.Model, OwnedBy: "capsuled", Created: time.Now()}},
	}, log)
	if err != nil {
		return "", "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(l) }()
	return "http://" + l.Addr().String(), key, func() { _ = hs.Close() }, nil
}

// timedEngine records the engine's own time per turn (search excluded: the
// tools run in the client between turns). When the engine reports, it also
// asks the same engine with the report's cut-off turned off (unpruned) over
// the same conversation, and keeps that list by question: the figures of the
// ranking before the cut. That second call is not timed.
type timedEngine struct {
	chat.Engine
	unpruned chat.Engine
	mu       sync.Mutex
	d        []time.Duration
	full     map[string][]string // question → the unpruned report
}

func (e *timedEngine) Generate(ctx context.Context, req *domain.ChatRequest) ([]domain.Choice, *domain.Usage, error) {
	t0 := time.Now()
	c, u, err := e.Engine.Generate(ctx, req)
	el := time.Since(t0)
	e.mu.Lock()
	e.d = append(e.d, el)
	e.mu.Unlock()
	if err == nil && len(c) > 0 && reportIDs(c[0]) != nil {
		if full, _, ferr := e.unpruned.Generate(ctx, req); ferr == nil && len(full) > 0 {
			q := ""
			for _, m := range req.Messages {
				if m.Role == domain.RoleUser {
					q = m.Text()
				}
			}
			e.mu.Lock()
			e.full[strings.TrimSpace(q)] = reportIDs(full[0])
			e.mu.Unlock()
		}
	}
	return c, u, err
}

// unprunedFor returns (and forgets) the unpruned report of a question.
func (e *timedEngine) unprunedFor(q string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := e.full[strings.TrimSpace(q)]
	delete(e.full, strings.TrimSpace(q))
	return ids
}

// reportIDs are the ids of a reply's report_helpful_ids call, or nil.
func reportIDs(c domain.Choice) []string {
	for _, tc := range c.ToolCalls {
		if tc.Name == builtin.ToolReport {
			ids, err := toolcall.ReportArgs(tc.Arguments)
			if err != nil || ids == nil {
				return []string{}
			}
			return ids
		}
	}
	return nil
}

func (e *timedEngine) turns() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.d...)
}

// benchStats accumulates both runs' figures.
type benchStats struct {
	n, reported, turns, calls int
	sum                       map[string]float64 // metric → sum over questions
	byKind                    map[string]*[2]float64
	kindN                     map[string]int
	byHops                    map[int]map[string]float64 // hop count → metric → sum, and "n"
	oneLat, agentLat          []time.Duration
	sizes                     []int // the reported lists' lengths
	listed, listedGold        int   // ids reported, and how many of them are gold
}

// An answer is one question's rankings (corpus ids): one-shot, the agent's
// report, and the agent's report without its cut-off (ranked).
type answer struct {
	oneshot, agent, ranked []string
	oneLat, agLat          time.Duration
	res                    *agent.Result
}

// ask answers q both ways and adds up the measures.
func (s *benchStats) ask(ctx context.Context, c *gen.ClientWithResponses, b agent.Backend, cache *searchCache, m agent.Model, capsuleName string, q benchQuestion, uri map[string]string, maxTurns int, unpruned func(string) []string) (answer, error) {
	var a answer
	// One-shot: hybrid search, one chunk per item, the top 10 items.
	t0 := time.Now()
	key := cacheKey("oneshot", capsuleName, q.text, 10)
	hits, ok := cache.get(key)
	if !ok {
		limit, one, mode := 10, 1, gen.Hybrid
		resp, err := c.QueryCapsuleWithResponse(ctx, capsuleName, gen.QueryCapsuleJSONRequestBody{Query: q.text, Limit: &limit,
			Wishlist: &gen.Wishlist{Mode: &mode, MaxChunksPerItem: &one}})
		if err != nil {
			return a, err
		}
		if resp.JSON200 == nil {
			return a, apiclient.Error(resp.StatusCode(), resp.Body)
		}
		for _, r := range *resp.JSON200 {
			hits = append(hits, agent.Hit{ID: r.ItemId})
		}
		cache.put(key, hits)
	}
	a.oneLat = time.Since(t0)
	for _, h := range hits {
		a.oneshot = append(a.oneshot, uri[h.ID])
	}
	if maxTurns <= 0 { // --max-turns 0: the one-shot query only
		a.res = &agent.Result{}
		s.add(q, a)
		return a, nil
	}
	// The loop over HTTP.
	t0 = time.Now()
	res, err := agent.Run(ctx, m, b, q.text, agent.Config{MaxTurns: maxTurns})
	if err != nil {
		return a, err
	}
	a.agLat = time.Since(t0)
	a.res = res
	for _, id := range res.IDs {
		if u, ok := uri[id]; ok {
			a.agent = append(a.agent, u)
		}
	}
	a.ranked = a.agent
	if full := unpruned(q.text); full != nil {
		a.ranked = nil
		for _, id := range full {
			if u, ok := uri[id]; ok {
				a.ranked = append(a.ranked, u)
			}
		}
	}
	s.add(q, a)
	return a, nil
}

// seenIDs lists the corpus ids of every document the loop's tool calls
// returned, in the order they were first returned: what the loop could have
// reported.
func seenIDs(res *agent.Result, uri map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, st := range res.Trace {
		for _, tc := range st.ToolCalls {
			for _, id := range tc.ResultIDs {
				if u, ok := uri[id]; ok && !seen[u] {
					seen[u] = true
					out = append(out, u)
				}
			}
		}
	}
	return out
}

// reasoning returns what the model said of each turn.
func reasoning(res *agent.Result) []string {
	out := make([]string, 0, len(res.Trace))
	for _, st := range res.Trace {
		out = append(out, st.Content)
	}
	return out
}

// add adds up one answer's measures.
func (s *benchStats) add(q benchQuestion, a answer) {
	if s.sum == nil {
		s.sum, s.byKind, s.kindN = map[string]float64{}, map[string]*[2]float64{}, map[string]int{}
	}
	s.oneLat = append(s.oneLat, a.oneLat)
	s.agentLat = append(s.agentLat, a.agLat)
	s.n++
	s.turns += a.res.Turns
	s.calls += a.res.ToolCalls
	if a.res.Reported {
		s.reported++
	}
	s.sizes = append(s.sizes, len(a.agent))
	s.listed += len(a.agent)
	for _, id := range a.agent {
		if q.rel[id] > 0 {
			s.listedGold++
		}
	}
	s.sum["report_recall"] += recallAt(a.agent, q.rel, len(a.agent))
	s.sum["unpruned_recall"] += recallAt(a.ranked, q.rel, len(a.ranked))
	for run, list := range map[string][]string{"oneshot": a.oneshot, "agent": a.agent, "agent_unpruned": a.ranked} {
		for _, k := range []int{2, 5, 10} {
			r := recallAt(list, q.rel, k)
			s.sum[fmt.Sprintf("%s_recall_at_%d", run, k)] += r
			if r == 1 {
				s.sum[fmt.Sprintf("%s_both_at_%d", run, k)]++
			}
		}
	}
	if q.hops > 0 {
		if s.byHops == nil {
			s.byHops = map[int]map[string]float64{}
		}
		h := s.byHops[q.hops]
		if h == nil {
			h = map[string]float64{}
			s.byHops[q.hops] = h
		}
		h["n"]++
		for run, list := range map[string][]string{"oneshot": a.oneshot, "agent": a.agent, "agent_unpruned": a.ranked} {
			h[run+"_recall_at_5"] += recallAt(list, q.rel, 5)
			h[run+"_both_at_10"] += float64(btoi(recallAt(list, q.rel, 10) == 1))
		}
	}
	if s.byKind[q.kind] == nil {
		s.byKind[q.kind] = &[2]float64{}
	}
	s.kindN[q.kind]++
	if recallAt(a.oneshot, q.rel, 10) == 1 {
		s.byKind[q.kind][0]++
	}
	if recallAt(a.agent, q.rel, 10) == 1 {
		s.byKind[q.kind][1]++
	}
}

func (s *benchStats) summary() map[string]any {
	n := float64(max(s.n, 1))
	res := map[string]any{"questions": s.n}
	for _, run := range []string{"oneshot", "agent", "agent_unpruned"} {
		for _, k := range []int{2, 5, 10} {
			res[fmt.Sprintf("%s_recall_at_%d", run, k)] = round4(s.sum[fmt.Sprintf("%s_recall_at_%d", run, k)] / n)
			res[fmt.Sprintf("%s_both_at_%d", run, k)] = round4(s.sum[fmt.Sprintf("%s_both_at_%d", run, k)] / n)
		}
	}
	// the report: its length, the share of its ids that are gold, and the
	// recall of the whole list against the whole unpruned list's
	res["report_size_p50"], res["report_size_p90"] = intPct(s.sizes, 50), intPct(s.sizes, 90)
	res["report_precision"] = round4(float64(s.listedGold) / float64(max(s.listed, 1)))
	res["report_recall"], res["unpruned_recall"] = round4(s.sum["report_recall"]/n), round4(s.sum["unpruned_recall"]/n)
	if u := s.sum["unpruned_recall"]; u > 0 {
		res["report_recall_ratio"] = round4(s.sum["report_recall"] / u)
	}
	res["turns_per_question"] = round4(float64(s.turns) / n)
	res["tool_calls_per_question"] = round4(float64(s.calls) / n)
	res["reported_share"] = round4(float64(s.reported) / n)
	res["oneshot_latency_p50_ms"], res["oneshot_latency_p95_ms"] = pct(s.oneLat, 50), pct(s.oneLat, 95)
	res["agent_latency_p50_ms"], res["agent_latency_p95_ms"] = pct(s.agentLat, 50), pct(s.agentLat, 95)
	// per hop count: "oneshot_both_at_10_hops_4", …, and "questions_hops_4"
	for hops, h := range s.byHops {
		res[fmt.Sprintf("questions_hops_%d", hops)] = int(h["n"])
		for k, v := range h {
			if k != "n" {
				res[fmt.Sprintf("%s_hops_%d", k, hops)] = round4(v / h["n"])
			}
		}
	}
	for kind, v := range s.byKind {
		if kind == "" {
			continue
		}
		k := float64(s.kindN[kind])
		res["oneshot_both_at_10_"+kind] = round4(v[0] / k)
		res["agent_both_at_10_"+kind] = round4(v[1] / k)
	}
	return res
}

// oneShotOnly drops the loop's figures from a run without the loop
// (--max-turns 0), and from its halves.
func oneShotOnly(res map[string]any) {
	for k, v := range res {
		if sub, ok := v.(map[string]any); ok {
			oneShotOnly(sub)
		}
		for _, p := range []string{"agent", "report_", "unpruned_", "turns_", "tool_calls_", "reported_", "engine_turn"} {
			if strings.HasPrefix(k, p) {
				delete(res, k)
			}
		}
	}
	res["oneshot_only"] = true
}

// intPct is the p-th percentile of xs (nearest rank).
func intPct(xs []int, p int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(0, min(len(s)-1, (len(s)*p+99)/100-1))]
}

func printAgentBench(w io.Writer, r map[string]any) {
	fmt.Fprintf(w, "%s: %v questions over %v documents (%v chunks, %v, %v CPUs; ingest %vs)\n",
		r["dataset"], r["questions"], r["docs"], r["chunks"], r["model"], r["cpus"], r["ingest_s"])
	fmt.Fprintf(w, "  %-14s %8s %8s %8s %8s %8s %8s\n", "", "both@10", "both@5", "both@2", "rec@2", "rec@5", "rec@10")
	for _, run := range []string{"oneshot", "agent", "agent_unpruned"} {
		if _, ok := r[run+"_both_at_10"]; !ok {
			continue
		}
		fmt.Fprintf(w, "  %-14s %8v %8v %8v %8v %8v %8v\n", run, r[run+"_both_at_10"], r[run+"_both_at_5"], r[run+"_both_at_2"],
			r[run+"_recall_at_2"], r[run+"_recall_at_5"], r[run+"_recall_at_10"])
	}
	if r["oneshot_only"] == true {
		fmt.Fprintf(w, "  one-shot only (--max-turns 0): latency per question p50 %vms p95 %vms\n", r["oneshot_latency_p50_ms"], r["oneshot_latency_p95_ms"])
		return
	}
	fmt.Fprintf(w, "  report: size p50 %v p90 %v; precision %v; recall of the list %v (unpruned %v, ratio %v)\n",
		r["report_size_p50"], r["report_size_p90"], r["report_precision"], r["report_recall"], r["unpruned_recall"], r["report_recall_ratio"])
	fmt.Fprintf(w, "  agent: %v turns and %v tool calls per question; report_helpful_ids reached in %v of questions\n",
		r["turns_per_question"], r["tool_calls_per_question"], r["reported_share"])
	fmt.Fprintf(w, "  latency per question: one-shot p50 %vms p95 %vms; agent p50 %vms p95 %vms; engine time per turn p50 %vms\n",
		r["oneshot_latency_p50_ms"], r["oneshot_latency_p95_ms"], r["agent_latency_p50_ms"], r["agent_latency_p95_ms"], r["engine_turn_p50_ms"])
	for _, kind := range []string{"bridge", "comparison", "compositional", "inference", "bridge_comparison", "temporal"} {
		if v, ok := r["agent_both_at_10_"+kind]; ok {
			fmt.Fprintf(w, "  %s: both@10 one-shot %v, agent %v\n", kind, r["oneshot_both_at_10_"+kind], v)
		}
	}
	for hops := 1; hops <= 8; hops++ {
		if n, ok := r[fmt.Sprintf("questions_hops_%d", hops)]; ok {
			k := func(m string) any { return r[fmt.Sprintf("%s_hops_%d", m, hops)] }
			fmt.Fprintf(w, "  %d hops (%v questions): both@10 one-shot %v, agent %v (ranking %v); recall@5 one-shot %v, agent %v (ranking %v)\n", hops, n,
				k("oneshot_both_at_10"), k("agent_both_at_10"), k("agent_unpruned_both_at_10"), k("oneshot_recall_at_5"), k("agent_recall_at_5"), k("agent_unpruned_recall_at_5"))
		}
	}
}

// searchCache remembers search results across runs (--search-cache). A nil
// cache remembers nothing.
type searchCache struct {
	path  string
	mu    sync.Mutex
	m     map[string][]agent.Hit
	dirty bool
}

func loadSearchCache(path string) (*searchCache, error) {
	if path == "" {
		return nil, nil
	}
	c := &searchCache{path: path, m: map[string][]agent.Hit{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := gob.NewDecoder(f).Decode(&c.m); err != nil {
		return nil, fmt.Errorf("search cache %s: %w", path, err)
	}
	return c, nil
}

func cacheKey(kind, capsule, query string, limit int) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%s", kind, capsule, limit, query)
}

func (c *searchCache) get(key string) ([]agent.Hit, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[key]
	return h, ok
}

func (c *searchCache) put(key string, hits []agent.Hit) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key], c.dirty = hits, true
}

// save writes the cache when it learnt something (to a temporary file, then
// renamed over the old one).
func (c *searchCache) save() error {
	if c == nil || !c.dirty {
		return nil
	}
	tmp := c.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(c.m); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

// cachedBackend answers searches from the cache, and asks b on a miss.
type cachedBackend struct {
	b       agent.Backend
	c       *searchCache
	capsule string
}

func (cb *cachedBackend) cached(kind, q string, limit int, f func() ([]agent.Hit, error)) ([]agent.Hit, error) {
	key := cacheKey(kind, cb.capsule, q, limit)
	if h, ok := cb.c.get(key); ok {
		return h, nil
	}
	h, err := f()
	if err == nil {
		cb.c.put(key, h)
	}
	return h, err
}

func (cb *cachedBackend) Search(ctx context.Context, q string, limit int) ([]agent.Hit, error) {
	return cb.cached("search", q, limit, func() ([]agent.Hit, error) { return cb.b.Search(ctx, q, limit) })
}

func (cb *cachedBackend) TextSearch(ctx context.Context, q string, limit int) ([]agent.Hit, error) {
	return cb.cached("text_search", q, limit, func() ([]agent.Hit, error) { return cb.b.TextSearch(ctx, q, limit) })
}

func (cb *cachedBackend) Read(ctx context.Context, id string) (string, error) {
	h, err := cb.cached("read", id, 0, func() ([]agent.Hit, error) {
		text, err := cb.b.Read(ctx, id)
		return []agent.Hit{{ID: id, Text: text}}, err
	})
	if err != nil || len(h) == 0 {
		return "", err
	}
	return h[0].Text, nil
}

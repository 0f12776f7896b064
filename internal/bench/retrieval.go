package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"capsuled/api"
	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/cli"
	"capsuled/internal/domain"
	"capsuled/internal/embed/ort"
	"capsuled/internal/retrieval"
	"capsuled/internal/store/postgres"
	"capsuled/internal/store/sqlite"
)

// runRetrieval is `capsuled bench retrieval`: it ingests a BEIR folder
// into a fresh capsule and measures quality (nDCG@10, Recall@100 for hybrid,
// BM25 and dense from one run; as BEIR's evaluation does, a hit whose id is
// the query's own id is ignored, and the count is reported), ingestion speed against the bare embedder,
// query latency in process and over HTTP, and resident memory.
func runRetrieval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("bench retrieval", stderr)
	dataset := fs.String("dataset", "", "BEIR folder (corpus.jsonl.gz, queries.jsonl.gz, qrels/<split>.tsv)")
	split := fs.String("split", "test", "qrels split to evaluate (tune on train, report test)")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line")
	onnxDir := fs.String("onnx-dir", "", "folder of the ONNX model (required; env CAPSULED_ONNX_DIR)")
	modelFile := fs.String("model-file", "", "model file in the folder (default model.onnx)")
	ortLib := fs.String("ort-lib", "", "libonnxruntime.so")
	maxDocs := fs.Int("max-docs", 0, "ingest only the first N documents (0: all)")
	sweep := fs.Bool("sweep", false, "also print nDCG@10 for several fusion settings")
	fusion := fs.String("fusion", "", "hybrid fusion: convex or rrf (default: the engine's)")
	alpha := fs.Float64("alpha", 0, "dense weight of the convex fusion (0: default)")
	ftsTokenizer := fs.String("fts-tokenizer", "", "SQLite only, to measure tokenizers: rebuild the empty full-text index with this FTS5 tokenize= value (e.g. \"unicode61 remove_diacritics 2\") before ingesting")
	kwNorm := fs.String("keyword-norm", "", "BM25 score normalisation: coverage, query or saturate (default: the engine's)")
	bareSample := fs.Int("bare-sample", 1000, "chunks embedded by the bare embedder to measure its speed")
	storeURL := fs.String("store", "", "postgres://… to run on PostgreSQL (an empty database or schema) instead of a temporary SQLite")
	fullText := fs.String("fulltext", "", "PostgreSQL keyword ranking: bm25 (pg_textsearch) or tsvector (default: bm25 when present)")
	dataDir := fs.String("data-dir", "", "keep the SQLite database in this folder (default: a temporary one); a capsule already ingested there from the same documents is reused (ingestion is then not measured)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the query phases to this file")
	workers := fs.Int("ingest-workers", capsule.DefaultWorkers, "ingestion jobs worked at once (one item each; their embedder calls are batched together)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *dataset == "" {
		return fmt.Errorf("--dataset is required")
	}
	if *onnxDir == "" {
		*onnxDir = os.Getenv("CAPSULED_ONNX_DIR")
	}
	if *onnxDir == "" {
		return errors.New("--onnx-dir (or CAPSULED_ONNX_DIR) is required: the benchmark measures the real model")
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	queries, err := readBEIRQueries(filepath.Join(*dataset, "queries.jsonl.gz"))
	if err != nil {
		return err
	}
	qrels, err := readQrels(filepath.Join(*dataset, "qrels", *split+".tsv"))
	if err != nil {
		return err
	}
	corpus, err := readBEIRCorpus(filepath.Join(*dataset, "corpus.jsonl.gz"), *maxDocs, qrels)
	if err != nil {
		return err
	}
	if *maxDocs > 0 {
		// A subset keeps the split's relevant documents first; evaluate only
		// the queries whose relevant documents are all in it.
		in := map[string]bool{}
		for _, d := range corpus {
			in[d.id] = true
		}
		for q, rel := range qrels {
			for id := range rel {
				if !in[id] {
					delete(qrels, q)
					break
				}
			}
		}
	}
	emb, err := ort.New(ctx, ort.Config{ModelDir: *onnxDir, ModelFile: *modelFile, ORTLibrary: *ortLib})
	if err != nil {
		return err
	}
	defer emb.Close()

	bs, err := openBenchStore(ctx, *dataDir, "capsuled-bench-", *storeURL, postgres.Options{FullText: postgres.FullText(*fullText)})
	if err != nil {
		return err
	}
	defer bs.close()
	dir, st, keys := bs.dir, bs.caps, bs.keys
	if bs.pg != nil {
		fmt.Fprintf(stderr, "store: PostgreSQL, keyword ranking %s\n", bs.pg.FullText())
	} else if *ftsTokenizer != "" {
		if err := rebuildFTS(ctx, bs.lite, *ftsTokenizer); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "full-text tokenizer: %s\n", *ftsTokenizer)
	}
	rcfg := retrieval.Config{Fusion: retrieval.Fusion(*fusion), Alpha: *alpha, KeywordNorm: retrieval.KeywordNorm(*kwNorm)}
	svc, err := capsule.New(capsule.Config{Store: st, Embedder: emb, Tokens: emb.Tokenizer(), DataDir: dir, Workers: *workers, Retrieval: rcfg, Log: log})
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Close()
	desc := fmt.Sprintf("BEIR %s, %d documents", filepath.Base(*dataset), len(corpus))
	c, err := st.GetCapsule(ctx, "bench")
	reused := err == nil && c.Description == desc && c.ItemCount == len(corpus) && c.ChunkCount > 0
	if err == nil && !reused {
		if err := svc.DeleteCapsule(ctx, "bench"); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return err
	}

	// Ingestion.
	var chunksPerS float64
	if reused {
		fmt.Fprintf(stderr, "reusing capsule bench in %s (%d items, %d chunks): ingestion not measured\n", dir, c.ItemCount, c.ChunkCount)
	} else {
		if _, err := svc.CreateCapsule(ctx, "bench", desc); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "ingesting %d documents with %s...\n", len(corpus), emb.ModelID())
		start := time.Now()
		var ids []string
		for _, d := range corpus {
			it, _, err := svc.AddItem(ctx, "bench", capsule.NewItem{Kind: domain.ItemText, Text: d.text, URI: d.id})
			if err != nil {
				return err
			}
			ids = append(ids, it.ID)
		}
		for _, id := range ids {
			if _, err := svc.WaitItem(ctx, "bench", id, time.Hour); err != nil {
				return err
			}
		}
		ingest := time.Since(start)
		if c, err = svc.GetCapsule(ctx, "bench"); err != nil {
			return err
		}
		chunksPerS = float64(c.ChunkCount) / ingest.Seconds()
		fmt.Fprintf(stderr, "ingested %d chunks in %s: %.1f chunks/s\n", c.ChunkCount, ingest.Round(time.Millisecond), chunksPerS)
	}

	// The bare embedder on a sample of the same chunks.
	var sample []string
	err = st.ChunkVectors(ctx, "bench", func(id string, idx int, _ []float32) error {
		if len(sample) < *bareSample {
			t, err := st.ChunkText(ctx, id, idx)
			if err != nil {
				return err
			}
			sample = append(sample, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	start := time.Now()
	for i := 0; i < len(sample); i += 64 {
		if _, err := emb.Embed(ctx, sample[i:min(i+64, len(sample))]); err != nil {
			return err
		}
	}
	bareChunksPerS := float64(len(sample)) / time.Since(start).Seconds()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	// Quality, in process, through the service's query path.
	var qids []string
	for id := range qrels {
		if _, ok := queries[id]; ok {
			qids = append(qids, id)
		}
	}
	sort.Strings(qids)
	ownIDHits := 0
	eval := func(search func(q domain.Query) ([]domain.Hit, error), mode domain.SearchMode) (ndcg, recall float64, lat []time.Duration, err error) {
		for _, qid := range qids {
			q := domain.Query{Text: queries[qid], Limit: 100, Wishlist: domain.Wishlist{Mode: mode, MaxChunksPerItem: 1}}
			t0 := time.Now()
			hits, err := search(q)
			if err != nil {
				return 0, 0, nil, err
			}
			lat = append(lat, time.Since(t0))
			var ranked []string
			for _, h := range hits {
				if h.Item.URI == qid {
					// BEIR's convention (its evaluation's ignore_identical_ids):
					// where queries are corpus documents (ArguAna, Quora), the
					// query's own document is not a hit.
					ownIDHits++
					continue
				}
				ranked = append(ranked, h.Item.URI)
			}
			ndcg += ndcgAt(ranked, qrels[qid], 10)
			recall += recallAt(ranked, qrels[qid], 100)
		}
		n := float64(len(qids))
		return ndcg / n, recall / n, lat, nil
	}
	query := func(q domain.Query) ([]domain.Hit, error) { return svc.Query(ctx, "bench", q) }
	res := map[string]any{"dataset": filepath.Base(*dataset), "split": *split, "queries": len(qids), "docs": len(corpus),
		"chunks": c.ChunkCount, "model": emb.ModelID(), "cpus": runtime.NumCPU()}
	for _, m := range []domain.SearchMode{domain.ModeHybrid, domain.ModeKeyword, domain.ModeSemantic} {
		cpu0 := cpuTime()
		ndcg, recall, lat, err := eval(query, m)
		cpu := cpuTime() - cpu0
		if err != nil {
			return err
		}
		prefix := map[domain.SearchMode]string{domain.ModeHybrid: "", domain.ModeKeyword: "bm25_", domain.ModeSemantic: "dense_"}[m]
		res[prefix+"ndcg_at_10"], res[prefix+"recall_at_100"] = round4(ndcg), round4(recall)
		if m == domain.ModeHybrid {
			res["query_p50_ms"], res["query_p99_ms"] = pct(lat, 50), pct(lat, 99)
			res["query_cpu_ms"] = perQueryMS(cpu, len(lat))
		}
		fmt.Fprintf(stderr, "%-8s nDCG@10 %.4f  Recall@100 %.4f\n", m, ndcg, recall)
	}
	// Hits on the query's own document, ignored above (all three modes).
	res["own_id_hits_ignored"] = ownIDHits
	if ownIDHits > 0 {
		fmt.Fprintf(stderr, "ignored %d hits on the query's own document (BEIR's convention)\n", ownIDHits)
	}
	if *sweep {
		memo := &memoEmbedder{emb: emb, vecs: map[string][]float32{}}
		for _, cfg := range sweepConfigs() {
			eng := retrieval.New(st, memo, emb.Dim(), cfg)
			ndcg, recall, _, err := eval(func(q domain.Query) ([]domain.Hit, error) { return eng.Search(ctx, "bench", q) }, domain.ModeHybrid)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "sweep fusion=%s alpha=%.2f keyword_norm=%s bm25_scale=%g rrf_k=%g: nDCG@10 %.4f Recall@100 %.4f\n", cfg.Fusion, cfg.Alpha, cfg.KeywordNorm, cfg.BM25Scale, cfg.RRFK, ndcg, recall)
		}
	}

	// The approximate dense scan on the real vectors, forced on whatever the
	// capsule's size: its dense nDCG@10 and its recall@10 against the exact
	// scan (chunks, no per-item cap). On a store that searches vectors
	// itself (PostgreSQL: its HNSW index) that search is the approximate
	// one, and the exact scan runs over the store's vectors in memory.
	{
		memo := &memoEmbedder{emb: emb, vecs: map[string][]float32{}}
		var exactSrc retrieval.Source = st
		approxName := "approximate dense scan (forced)"
		if _, ok := st.(retrieval.StoreSearcher); ok {
			exactSrc = struct{ retrieval.Source }{st} // hides the store's own search
			approxName = "the store's vector index"
		}
		exactEng := retrieval.New(exactSrc, memo, emb.Dim(), retrieval.Config{ApproxMin: -1})
		approxEng := retrieval.New(st, memo, emb.Dim(), retrieval.Config{ApproxMin: 1})
		ndcg, _, _, err := eval(func(q domain.Query) ([]domain.Hit, error) { return approxEng.Search(ctx, "bench", q) }, domain.ModeSemantic)
		if err != nil {
			return err
		}
		found := 0
		for _, qid := range qids {
			q := domain.Query{Text: queries[qid], Limit: 10, Wishlist: domain.Wishlist{Mode: domain.ModeSemantic}}
			want, err := exactEng.Search(ctx, "bench", q)
			if err != nil {
				return err
			}
			got, err := approxEng.Search(ctx, "bench", q)
			if err != nil {
				return err
			}
			in := map[string]bool{}
			for _, h := range want {
				in[fmt.Sprint(h.Item.ID, "/", h.Idx)] = true
			}
			for _, h := range got {
				if in[fmt.Sprint(h.Item.ID, "/", h.Idx)] {
					found++
				}
			}
		}
		res["dense_approx_ndcg_at_10"] = round4(ndcg)
		res["approx_recall_at_10"] = round4(float64(found) / float64(10*len(qids)))
		fmt.Fprintf(stderr, "%s: nDCG@10 %.4f, recall@10 vs exact %v\n", approxName, ndcg, res["approx_recall_at_10"])
	}

	// Bare query embedding and the HTTP path (10 results, as a client asks).
	var bare, httpLat []time.Duration
	cpu0 := cpuTime()
	for _, qid := range qids {
		t0 := time.Now()
		if _, err := emb.Embed(ctx, []string{queries[qid]}); err != nil {
			return err
		}
		bare = append(bare, time.Since(t0))
	}
	bareCPU := cpuTime() - cpu0
	srvURL, key, stop, err := benchHTTP(ctx, keys, svc, log)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{}
	cpu0 = cpuTime()
	for _, qid := range qids {
		body, _ := json.Marshal(map[string]any{"query": queries[qid], "limit": 10})
		req, _ := http.NewRequestWithContext(ctx, "POST", srvURL+"/capsules/bench/query", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("HTTP query: status %d", resp.StatusCode)
		}
		httpLat = append(httpLat, time.Since(t0))
	}
	httpCPU := cpuTime() - cpu0
	res["bare_query_embed_cpu_ms"] = perQueryMS(bareCPU, len(bare))
	res["http_query_cpu_ms"] = perQueryMS(httpCPU, len(httpLat))
	res["reused_capsule"] = reused
	res["ingest_chunks_per_s"] = round4(chunksPerS)
	res["bare_embed_chunks_per_s"] = round4(bareChunksPerS)
	res["ingest_vs_bare"] = round4(chunksPerS / bareChunksPerS)
	res["bare_query_embed_p50_ms"] = pct(bare, 50)
	res["http_query_p50_ms"], res["http_query_p99_ms"] = pct(httpLat, 50), pct(httpLat, 99)
	res["rss_mb"] = rssMB()
	fmt.Fprintf(stdout, "%s %s (%d queries, %d docs, %d chunks, %s, %d CPUs)\n", res["dataset"], *split, len(qids), len(corpus), c.ChunkCount, emb.ModelID(), runtime.NumCPU())
	fmt.Fprintf(stdout, "  hybrid  nDCG@10 %v  Recall@100 %v\n  bm25    nDCG@10 %v  Recall@100 %v\n  dense   nDCG@10 %v  Recall@100 %v\n",
		res["ndcg_at_10"], res["recall_at_100"], res["bm25_ndcg_at_10"], res["bm25_recall_at_100"], res["dense_ndcg_at_10"], res["dense_recall_at_100"])
	fmt.Fprintf(stdout, "  ingest %v chunks/s (bare embedder %v chunks/s, ratio %v)\n", res["ingest_chunks_per_s"], res["bare_embed_chunks_per_s"], res["ingest_vs_bare"])
	fmt.Fprintf(stdout, "  query p50 %vms p99 %vms in process (limit 100); HTTP p50 %vms p99 %vms (limit 10); bare query embedding p50 %vms\n",
		res["query_p50_ms"], res["query_p99_ms"], res["http_query_p50_ms"], res["http_query_p99_ms"], res["bare_query_embed_p50_ms"])
	fmt.Fprintf(stdout, "  CPU per query (all threads, steadier than wall time on a shared machine): %vms in process, %vms over HTTP (client and server), %vms bare query embedding\n",
		res["query_cpu_ms"], res["http_query_cpu_ms"], res["bare_query_embed_cpu_ms"])
	fmt.Fprintf(stdout, "  rss %v MB\n", res["rss_mb"])
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}

func sweepConfigs() []retrieval.Config {
	var out []retrieval.Config
	for _, k := range []float64{20, 60} {
		out = append(out, retrieval.Config{Fusion: retrieval.FusionRRF, RRFK: k})
	}
	for _, norm := range []retrieval.KeywordNorm{retrieval.KeywordNormQuery, retrieval.KeywordNormCoverage} {
		for _, a := range []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8} {
			out = append(out, retrieval.Config{Fusion: retrieval.FusionConvex, Alpha: a, KeywordNorm: norm})
		}
	}
	for _, s := range []float64{5, 10, 20} {
		for _, a := range []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8} {
			out = append(out, retrieval.Config{Fusion: retrieval.FusionConvex, Alpha: a, KeywordNorm: retrieval.KeywordNormSaturate, BM25Scale: s})
		}
	}
	return out
}

// benchHTTP serves the service over a real HTTP listener with an admin key.
func benchHTTP(ctx context.Context, keys auth.Store, svc *capsule.Service, log *slog.Logger) (string, string, func(), error) {
	au := auth.New(keys, time.Now, log)
	// A key of its own each run: a reused data directory already has keys.
	_, key, err := au.CreateKey(ctx, auth.NewKey{Name: "bench retrieval", Scopes: []domain.Scope{domain.ScopeAdmin}})
	if err != nil {
		return "", "", nil, err
	}
	spec, err := api.LoadSpec(ctx)
	if err != nil {
		return "", "", nil, err
	}
	srv, err := api.NewServer(api.Config{}, spec, api.Deps{Auth: au, Capsules: svc}, log)
	if err != nil {
		return "", "", nil, err
	}
	ts := httptest.NewServer(srv.Handler())
	return ts.URL, key, ts.Close, nil
}

type beirDoc struct{ id, text string }

// readBEIRCorpus reads the corpus; with max > 0 it keeps the documents
// relevant to qrels first, then fills up to max in file order.
func readBEIRCorpus(path string, max int, qrels map[string]map[string]int) ([]beirDoc, error) {
	relevant := map[string]bool{}
	for _, rel := range qrels {
		for id := range rel {
			relevant[id] = true
		}
	}
	var out, rest []beirDoc
	err := readJSONLGz(path, func(line []byte) error {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		text := strings.TrimSpace(d.Title + "\n\n" + d.Text)
		switch {
		case text == "":
		case max <= 0 || relevant[d.ID]:
			out = append(out, beirDoc{d.ID, text})
		default:
			rest = append(rest, beirDoc{d.ID, text})
		}
		return nil
	})
	if max > 0 {
		out = append(out, rest[:min(len(rest), max-min(max, len(out)))]...)
		out = out[:min(len(out), max)]
	}
	return out, err
}

func readBEIRQueries(path string) (map[string]string, error) {
	out := map[string]string{}
	err := readJSONLGz(path, func(line []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		out[q.ID] = q.Text
		return nil
	})
	return out, err
}

func readJSONLGz(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

// readQrels reads query-id, corpus-id, score lines (with a header).
func readQrels(path string) (map[string]map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if i == 0 || len(f) != 3 {
			continue
		}
		s, err := strconv.Atoi(f[2])
		if err != nil || s <= 0 {
			continue
		}
		if out[f[0]] == nil {
			out[f[0]] = map[string]int{}
		}
		out[f[0]][f[1]] = s
	}
	return out, nil
}

func ndcgAt(ranked []string, rel map[string]int, k int) float64 {
	dcg := 0.0
	for i, id := range ranked[:min(k, len(ranked))] {
		if g := rel[id]; g > 0 {
			dcg += (math.Pow(2, float64(g)) - 1) / math.Log2(float64(i)+2)
		}
	}
	var gains []int
	for _, g := range rel {
		gains = append(gains, g)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(gains)))
	idcg := 0.0
	for i, g := range gains[:min(k, len(gains))] {
		idcg += (math.Pow(2, float64(g)) - 1) / math.Log2(float64(i)+2)
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func recallAt(ranked []string, rel map[string]int, k int) float64 {
	found := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(len(rel))
}

func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return round4(float64(s[max(i, 0)].Microseconds()) / 1000)
}

// cpuTime is the CPU time the process has used, user and system, all
// threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func perQueryMS(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return round4(float64(d.Microseconds()) / 1000 / float64(n))
}

func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return math.Round(kb/1024*10) / 10
			}
		}
	}
	return 0
}

// memoEmbedder remembers query vectors across the sweep's engines.
type memoEmbedder struct {
	emb  retrieval.QueryEmbedder
	vecs map[string][]float32
}

func (m *memoEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := m.vecs[t]
		if !ok {
			vs, err := m.emb.Embed(ctx, []string{t})
			if err != nil {
				return nil, err
			}
			v = vs[0]
			m.vecs[t] = v
		}
		out[i] = v
	}
	return out, nil
}

// rebuildFTS recreates the (still empty) chunk full-text index of a fresh
// benchmark database with another FTS5 tokenizer, to measure tokenizers.
func rebuildFTS(ctx context.Context, db *sqlite.DB, tokenize string) error {
	if strings.ContainsAny(tokenize, "'\x00") {
		return fmt.Errorf("fts-tokenizer %q: quotes are not allowed", tokenize)
	}
	for _, q := range []string{"DROP TABLE chunks_fts",
		"CREATE VIRTUAL TABLE chunks_fts USING fts5(body, cap, tokenize = '" + tokenize + "')"} {
		if _, err := db.Write().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("fts-tokenizer: %w", err)
		}
	}
	return nil
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/cli"
	"capsuled/internal/domain"
	"capsuled/internal/embed/ort"
	"capsuled/internal/rank"
	"capsuled/internal/retrieval"
	"capsuled/internal/store/postgres"
	"capsuled/internal/vecmath"
)

// scaleCapsule is the capsule `bench scale` builds.
const scaleCapsule = "scale"

// passagesPerItem is how many passage variants one item of the scale
// capsule joins: documents of several chunks, as users' files are.
const passagesPerItem = 8

// runScale is `capsuled bench scale`: it builds a capsule of about --chunks
// chunks of real text (SciFact and HotpotQA passages, repeated with
// variation) through the capsule service, with the real model's vectors or
// synthetic ones (synthEmbedder), then measures in this process the first
// load of the capsule's index, query latency excluding query embedding
// (hybrid, semantic, keyword, each without and with a metadata filter that
// 1% of the items pass) and dense recall@10 against exact search; then it
// starts --replicas server processes (`capsuled serve`) on the same store and
// measures each one's cold start to its first answer, query latency over
// HTTP and resident memory.
func runScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("bench scale", stderr)
	target := fs.Int("chunks", 10000, "chunks in the capsule (items are added until the chunker's count reaches it)")
	storeURL := fs.String("store", "sqlite", "sqlite (in --data-dir, else a temporary folder) or postgres://… (an empty database or schema, or one a run with the same --chunks and --vectors built)")
	replicas := fs.Int("replicas", 1, "server processes started on the built capsule (above 1: PostgreSQL only; 0: none)")
	vectors := fs.String("vectors", "synthetic", "model (the real embedding model; about 30 chunks/s on 2 cores), synthetic (a hashed bag of words of the same dimension whose variance decays over the coordinates as a model's does: see synthEmbedder) or synthetic-flat (the same without the decay: far harder for graph indexes than real embeddings)")
	dataDir := fs.String("data-dir", "", "keep the database (SQLite) and blobs in this folder; a capsule built there with the same --chunks and --vectors is reused (ingestion is then not measured)")
	scifact := fs.String("scifact", "../shared/data/beir/scifact", "SciFact BEIR folder (passages and queries)")
	hotpot := fs.String("hotpotqa", "../shared/data/hotpotqa", "HotpotQA BEIR folder (passages and queries)")
	nq := fs.Int("queries", 200, "queries timed per configuration")
	nRecall := fs.Int("recall-queries", 50, "queries of the recall measurement (0: no recall measurement, which reads every stored vector)")
	serverBin := fs.String("server-bin", "", "capsuled binary of the server processes (default: this executable)")
	onnxDir := fs.String("onnx-dir", "", "folder of the ONNX model, for --vectors model (env CAPSULED_ONNX_DIR)")
	ortLib := fs.String("ort-lib", "", "libonnxruntime.so, for --vectors model")
	workers := fs.Int("ingest-workers", capsule.DefaultWorkers, "ingestion jobs worked at once")
	rerank := fs.Int("approx-rerank", 0, "in-process figures only: chunks each worker of the approximate dense scan scores exactly (0: the engine's default, retrieval.DefaultApproxRerank)")
	modeList := fs.String("modes", "hybrid,semantic,keyword", "search modes timed in process (comma-separated)")
	deferIdx := fs.Bool("defer-indexes", false, "PostgreSQL: drop the chunks' search indexes (HNSW, BM25, GIN) before ingestion and build them after it with CREATE INDEX (postgres.DB.DeferIndexes), reported as index_build_s apart from ingest_s; on a reused capsule, build the indexes an earlier run left deferred (without it they are reported as indexes_deferred and searches go on without them)")
	idxWorkers := fs.Int("index-workers", 2, "PostgreSQL: parallel maintenance workers of each index build after --defer-indexes (max_parallel_maintenance_workers)")
	idxMem := fs.String("index-memory", "4GB", "PostgreSQL: maintenance_work_mem of each index build after --defer-indexes (the HNSW graph is built in memory within it: about 2 kB a chunk)")
	graphEfs := fs.String("graph-ef", "", "SQLite: also measure recall, and the latency of the --modes semantic and hybrid, with each of these graph beam widths (comma-separated; default retrieval.GraphEfFor the capsule's chunks), each through a new engine that reads the capsule's vectors and graph files")
	efList := fs.String("ef-search", "", "PostgreSQL: also measure recall, and the latency of the --modes semantic and hybrid, with each of these server hnsw.ef_search settings (comma-separated; each query asks for at least this, twice its candidates and the floor for the index's size, at most 1000)")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line")
	ingestProfile := fs.String("ingest-cpuprofile", "", "write a CPU profile of the ingestion phase (this process: the capsule service and an embedded store) to this file")
	heapProfile := fs.String("heap-profile", "", "write a heap profile of this process to this file after its in-process queries, when its memory is measured (the loaded indexes: what a server holds)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	isPG := strings.HasPrefix(*storeURL, "postgres://") || strings.HasPrefix(*storeURL, "postgresql://")
	switch {
	case *target < 1:
		return fmt.Errorf("--chunks %d: want at least 1", *target)
	case !isPG && *storeURL != "sqlite":
		return fmt.Errorf("--store %q: want sqlite or a postgres:// URL", *storeURL)
	case *replicas < 0 || (*replicas > 1 && !isPG):
		return fmt.Errorf("--replicas %d: want 0 or 1 on SQLite, 0 or more on PostgreSQL", *replicas)
	case *vectors != "model" && *vectors != "synthetic" && *vectors != "synthetic-flat":
		return fmt.Errorf("--vectors %q: want model, synthetic or synthetic-flat", *vectors)
	case *deferIdx && !isPG:
		return errors.New("--defer-indexes: PostgreSQL only")
	case *efList != "" && !isPG:
		return errors.New("--ef-search: PostgreSQL only")
	case *graphEfs != "" && isPG:
		return errors.New("--graph-ef: SQLite only")
	case *nq < 1 || *nRecall < 0:
		return errors.New("--queries must be at least 1, --recall-queries at least 0")
	}
	efs, err := widths("ef-search", *efList, 1000)
	if err != nil {
		return err
	}
	gefs, err := widths("graph-ef", *graphEfs, 100000)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res := map[string]any{"chunks_target": *target, "vectors": *vectors, "cpus": runtime.NumCPU(), "replicas": *replicas}
	if isPG {
		res["store"] = "postgres"
	} else {
		res["store"] = "sqlite"
	}
	res["load_avg_start"] = loadAvg()

	passages, err := scalePassages(*scifact, *hotpot)
	if err != nil {
		return err
	}
	queries, err := scaleQueries(*scifact, *hotpot, max(*nq, *nRecall))
	if err != nil {
		return err
	}

	// The embedder: the same vectors in this process and, through the
	// embeddings endpoint served below, in the server processes. Its model
	// id is the one the servers' HTTP embedder reports, so that stored
	// vectors and query vectors are known to come from one model.
	var emb capsule.Embedder
	var model string
	if *vectors == "model" {
		dir := *onnxDir
		if dir == "" {
			dir = os.Getenv("CAPSULED_ONNX_DIR")
		}
		if dir == "" {
			return errors.New("--vectors model needs --onnx-dir (or CAPSULED_ONNX_DIR)")
		}
		o, err := ort.New(ctx, ort.Config{ModelDir: dir, ORTLibrary: *ortLib})
		if err != nil {
			return err
		}
		defer o.Close()
		model = o.ModelID()
		emb = renamed{o, "openai:" + model}
	} else if *vectors == "synthetic" {
		model = fmt.Sprintf("synthetic-bow-decay%d-384", synthDecay)
		emb = newSynthEmbedder(384, "openai:"+model, synthDecay)
	} else {
		model = "synthetic-bow-384"
		emb = newSynthEmbedder(384, "openai:"+model, 0)
	}
	res["model"] = emb.ModelID()

	pgURL := ""
	if isPG {
		pgURL = *storeURL
	}
	bs, err := openBenchStore(ctx, *dataDir, "capsuled-scale-", pgURL, postgres.Options{})
	if err != nil {
		return err
	}
	defer func() { bs.close() }()
	dir, st, keys := bs.dir, bs.caps, bs.keys
	if bs.pg != nil {
		// The server settings the figures depend on most: its page cache,
		// and whether that is mapped in huge pages (huge_pages_status,
		// PostgreSQL 17; "" before), which spares each new connection a
		// page fault per 4 kB page of the cache it touches.
		var sb, huge string
		if err := bs.pg.Pool().QueryRow(ctx, `SELECT current_setting('shared_buffers'),
			coalesce(current_setting('huge_pages_status', true), '')`).Scan(&sb, &huge); err != nil {
			return fmt.Errorf("server settings: %w", err)
		}
		res["pg_shared_buffers"], res["pg_huge_pages"] = sb, huge
	}

	// Build.
	svc, err := capsule.New(capsule.Config{Store: st, Embedder: emb, DataDir: dir, Workers: *workers, Log: log})
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	desc := fmt.Sprintf("bench scale: %s vectors", emb.ModelID())
	// A capsule built by an earlier run with the same vectors is reused,
	// and grown to the target when it is smaller; one built with other
	// vectors is left alone (it may have taken hours to build).
	c, err := st.GetCapsule(ctx, scaleCapsule)
	reused := err == nil
	if reused && c.Description != desc {
		svc.Close()
		return fmt.Errorf("capsule %s exists with description %q, not %q: choose --vectors to match it, or another --data-dir or PostgreSQL schema", scaleCapsule, c.Description, desc)
	} else if err != nil && !errors.Is(err, domain.ErrNotFound) {
		svc.Close()
		return err
	}
	if !reused {
		if c, err = svc.CreateCapsule(ctx, scaleCapsule, desc); err != nil {
			svc.Close()
			return err
		}
	}
	if c.ChunkCount >= *target {
		fmt.Fprintf(stderr, "reusing capsule %s (%d items, %d chunks): ingestion not measured\n", scaleCapsule, c.ItemCount, c.ChunkCount)
	} else {
		before := c.ChunkCount
		if *deferIdx {
			dropped, err := bs.pg.DeferIndexes(ctx)
			if err != nil {
				svc.Close()
				return err
			}
			fmt.Fprintf(stderr, "indexes deferred until after ingestion: %s\n", strings.Join(dropped, ", "))
		}
		stopProfile, err := startProfile(*ingestProfile)
		if err != nil {
			svc.Close()
			return err
		}
		cpu0 := cpuTime()
		took, err := buildScale(ctx, svc, st, passages, c.ItemCount, c.ChunkCount, *target, stderr)
		ingestCPU := cpuTime() - cpu0
		stopProfile()
		if err != nil {
			svc.Close()
			return err
		}
		if c, err = st.GetCapsule(ctx, scaleCapsule); err != nil {
			svc.Close()
			return err
		}
		res["ingested_chunks"] = c.ChunkCount - before
		res["ingest_s"] = round4(took.Seconds())
		res["ingest_chunks_per_s"] = round4(float64(c.ChunkCount-before) / took.Seconds())
		// This process's CPU (the service and an embedded store; with
		// synthetic vectors, embedding costs next to nothing): on a loaded
		// machine the figure wall time hides.
		res["ingest_cpu_ms_per_chunk"] = round4(ingestCPU.Seconds() * 1000 / float64(max(c.ChunkCount-before, 1)))
		res["load_avg_ingest"] = loadAvg()
		fmt.Fprintf(stderr, "ingested %d chunks in %s: %.0f chunks/s; the capsule has %d items, %d chunks\n",
			c.ChunkCount-before, took.Round(time.Millisecond), res["ingest_chunks_per_s"], c.ItemCount, c.ChunkCount)
	}
	res["reused_capsule"] = reused
	if bs.pg != nil && *deferIdx {
		// Indexes this run or an interrupted earlier one deferred.
		if err := buildIndexes(ctx, bs.pg, postgres.BuildOptions{Workers: *idxWorkers, MaintenanceWorkMem: *idxMem}, res, stderr); err != nil {
			svc.Close()
			return err
		}
	} else if bs.pg != nil {
		// Without --defer-indexes, indexes another process is building (or
		// left deferred) are reported, not built: searches go on without.
		var deferred []string
		if err := bs.pg.Pool().QueryRow(ctx, "SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM deferred_indexes").Scan(&deferred); err != nil {
			svc.Close()
			return err
		}
		if len(deferred) > 0 {
			res["indexes_deferred"] = deferred
			fmt.Fprintf(stderr, "indexes still deferred (measured without them): %s\n", strings.Join(deferred, ", "))
		}
	}
	res["items"], res["chunks"] = c.ItemCount, c.ChunkCount
	if err := svc.Close(); err != nil {
		return err
	}

	// Query vectors, computed before any timing: latencies exclude query
	// embedding.
	qtexts := make([]string, len(queries))
	copy(qtexts, queries)
	qvecs, err := emb.Embed(ctx, qtexts)
	if err != nil {
		return err
	}
	memo := &lookupEmbedder{vecs: map[string][]float32{}, fallback: emb}
	for i, t := range qtexts {
		memo.vecs[t] = qvecs[i]
	}

	// In process: the index's first load, then the six query mixes.
	// The graph directory is the service's (capsule.Config.DataDir): a
	// graph this run builds is read back by the servers below and by the
	// next run over the same --data-dir.
	graphDir := filepath.Join(dir, "graphs")
	eng := retrieval.New(st, memo, emb.Dim(), retrieval.Config{ApproxRerank: *rerank, GraphDir: graphDir})
	defer eng.Close()
	if *rerank > 0 {
		res["approx_rerank"] = *rerank
	}
	filter := []domain.MetadataFilter{{Key: "group", Op: domain.OpEq, Value: 0.0}}
	t0 := time.Now()
	if _, err := eng.Search(ctx, scaleCapsule, domain.Query{Text: qtexts[0], Limit: 10, Wishlist: domain.Wishlist{Mode: domain.ModeSemantic}}); err != nil {
		return err
	}
	res["index_load_s"] = round4(time.Since(t0).Seconds())
	res["load_avg_index"] = loadAvg()
	fmt.Fprintf(stderr, "index loaded (first query) in %.2fs, load %v\n", res["index_load_s"], res["load_avg_index"])
	// Capsules of retrieval.DefaultGraphMin chunks or more build their HNSW
	// graph in the background (the scan serves meanwhile): wait for it, so
	// the figures below are the graph's.
	t0 = time.Now()
	if err := eng.GraphReady(ctx, scaleCapsule); err != nil {
		return err
	}
	if took := time.Since(t0); took > time.Second {
		// Built (and written to its file), or read from the file an
		// earlier run wrote (one too far behind the capsule is left for a
		// fresh build).
		what := "graph_build"
		if eng.GraphRead(scaleCapsule) {
			what = "graph_read"
		}
		res[what+"_s"] = round4(took.Seconds())
		res["load_avg_"+what] = loadAvg()
		fmt.Fprintf(stderr, "dense graph (%s) ready %.0fs later, load %v\n", what, took.Seconds(), res["load_avg_"+what])
	}
	// A capsule loaded from its vectors file checks the file in the
	// background: wait for that too, so the CPU per query is the query's.
	t0, cpu0 := time.Now(), cpuTime()
	if err := eng.VectorsChecked(ctx, scaleCapsule); err != nil {
		return err
	}
	if took := time.Since(t0); took > time.Second {
		res["vectors_check_s"] = round4(took.Seconds())
		res["vectors_check_cpu_s"] = round4((cpuTime() - cpu0).Seconds())
		fmt.Fprintf(stderr, "vectors file checked %.0fs later (%.0f CPU-s), load %v\n", took.Seconds(), res["vectors_check_cpu_s"], loadAvg())
	}
	// SQLite capsules of sqlite.DefaultKeywordIndexMin chunks or more answer
	// keyword search from an in-process index, built in the background from
	// the first keyword query: wait for it too.
	if kr, ok := st.(interface {
		KeywordReady(ctx context.Context, capsule string) error
	}); ok {
		t0, cpu0 := time.Now(), cpuTime()
		if err := kr.KeywordReady(ctx, scaleCapsule); err != nil {
			return err
		}
		if took := time.Since(t0); took > time.Second {
			res["keyword_index_s"] = round4(took.Seconds())
			res["keyword_index_cpu_s"] = round4((cpuTime() - cpu0).Seconds())
			res["load_avg_keyword_index"] = loadAvg()
			fmt.Fprintf(stderr, "keyword index built in %.0fs (%.0f CPU-s), load %v\n", took.Seconds(), res["keyword_index_cpu_s"], res["load_avg_keyword_index"])
		}
	}
	var modes []domain.SearchMode
	for _, m := range strings.Split(*modeList, ",") {
		switch mode := domain.SearchMode(strings.TrimSpace(m)); mode {
		case domain.ModeHybrid, domain.ModeSemantic, domain.ModeKeyword:
			modes = append(modes, mode)
		default:
			return fmt.Errorf("--modes: %q is not hybrid, semantic or keyword", m)
		}
	}
	for _, mode := range modes {
		for _, filtered := range []bool{false, true} {
			w := domain.Wishlist{Mode: mode}
			name := string(mode)
			if filtered {
				w.Metadata = filter
				name += "_filtered"
			}
			lat, cpu, empty, err := timeQueries(ctx, eng, qtexts[:*nq], w)
			if err != nil {
				return err
			}
			res[name+"_p50_ms"], res[name+"_p99_ms"], res[name+"_max_ms"] = pct(lat, 50), pct(lat, 99), pct(lat, 100)
			res[name+"_cpu_ms"] = perQueryMS(cpu, len(lat))
			if empty > 0 {
				res[name+"_empty_results"] = empty
			}
			fmt.Fprintf(stderr, "%-18s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  CPU %6.2f ms/query (load %v)\n", name, pct(lat, 50), pct(lat, 99), pct(lat, 100), res[name+"_cpu_ms"], loadAvg())
		}
	}
	res["load_avg_queries"] = loadAvg()

	// Dense recall@10 against exact search over every stored vector.
	rq := qtexts[:*nRecall]
	var exact, exactFiltered [][]chunkRef
	if *nRecall > 0 {
		inFilter, err := filterItems(ctx, st, filter)
		if err != nil {
			return err
		}
		t0 = time.Now()
		if exact, exactFiltered, err = exactTop10(ctx, st, qvecs[:*nRecall], inFilter); err != nil {
			return err
		}
		res["exact_scan_s"] = round4(time.Since(t0).Seconds())
		if err := denseRecall(ctx, eng, rq, filter, exact, exactFiltered, res, ""); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "dense recall@10 against exact: %v, with the 1%% filter %v\n", res["dense_recall_at_10"], res["dense_recall_at_10_filtered"])
	}
	// The same, and semantic and hybrid latency, at other hnsw.ef_search
	// floors: each through a store whose sessions start with that setting.
	for _, ef := range efs {
		u, err := url.Parse(*storeURL)
		if err != nil {
			return err
		}
		q := u.Query()
		q.Set("hnsw.ef_search", strconv.Itoa(ef))
		u.RawQuery = q.Encode()
		pg, err := postgres.Open(ctx, u.String(), postgres.Options{})
		if err != nil {
			return err
		}
		efEng := retrieval.New(pg.Capsules(), memo, emb.Dim(), retrieval.Config{})
		prefix := fmt.Sprintf("ef%d_", ef)
		if *nRecall > 0 {
			err = denseRecall(ctx, efEng, rq, filter, exact, exactFiltered, res, prefix)
		}
		for _, mode := range modes {
			for _, filtered := range []bool{false, true} {
				if err != nil || mode == domain.ModeKeyword {
					break
				}
				w := domain.Wishlist{Mode: mode}
				name := prefix + string(mode)
				if filtered {
					w.Metadata, name = filter, name+"_filtered"
				}
				var lat []time.Duration
				if lat, _, _, err = timeQueries(ctx, efEng, qtexts[:*nq], w); err == nil {
					res[name+"_p50_ms"], res[name+"_p99_ms"] = pct(lat, 50), pct(lat, 99)
				}
			}
		}
		pg.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "hnsw.ef_search %d: recall@10 %v (filtered %v); semantic p50 %v ms (filtered %v); hybrid p50 %v ms (filtered %v); load %.1f\n", ef,
			res[prefix+"dense_recall_at_10"], res[prefix+"dense_recall_at_10_filtered"], res[prefix+"semantic_p50_ms"], res[prefix+"semantic_filtered_p50_ms"],
			res[prefix+"hybrid_p50_ms"], res[prefix+"hybrid_filtered_p50_ms"], loadAvg())
	}
	if len(gefs) > 0 {
		if err := sqliteGraphEfs(ctx, st, memo, emb.Dim(), graphDir, gefs, modes, qtexts[:*nq], rq, filter, exact, exactFiltered, res, stderr); err != nil {
			return err
		}
	}
	runtime.GC()
	res["bench_rss_mb"] = rssMB()
	sqliteMemory(res, "bench_", os.Getpid())
	if err := writeHeapProfile(*heapProfile); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	// Stop the engine's background work (the check of a mapped vectors
	// file runs for seconds after a load) before the servers start: their
	// cold start is timed on cores this process leaves idle.
	eng.Close()
	eng = nil
	runtime.GC()
	debug.FreeOSMemory()

	// Server processes.
	if *replicas > 0 {
		if err := scaleServers(ctx, res, scaleServerConfig{bin: *serverBin, store: *storeURL, isPG: isPG, dir: dir, replicas: *replicas,
			model: model, queries: qtexts[:*nq], filter: filter, keys: keys, emb: memo, log: log}, stderr); err != nil {
			return err
		}
	}
	res["load_avg_end"] = loadAvg()

	fmt.Fprintf(stdout, "scale: %v store, %v items, %v chunks, %s vectors (%s), %d CPUs\n", res["store"], res["items"], res["chunks"], *vectors, emb.ModelID(), runtime.NumCPU())
	keysOut := make([]string, 0, len(res))
	for k := range res {
		keysOut = append(keysOut, k)
	}
	sort.Strings(keysOut)
	for _, k := range keysOut {
		fmt.Fprintf(stdout, "  %-36s %v\n", k, res[k])
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}

// buildIndexes builds the indexes DeferIndexes deferred, if any, and
// records how long each took (index_build_s: their total, with the load
// average at its end), printing the build's progress every minute.
func buildIndexes(ctx context.Context, pg *postgres.DB, opts postgres.BuildOptions, res map[string]any, stderr io.Writer) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Minute):
			}
			var phase string
			var blocks, blocksTotal, tuples, tuplesTotal int64
			err := pg.Pool().QueryRow(ctx, `SELECT p.phase, p.blocks_done, p.blocks_total, p.tuples_done, p.tuples_total
				FROM pg_stat_progress_create_index p WHERE p.relid = to_regclass('chunks')`).Scan(&phase, &blocks, &blocksTotal, &tuples, &tuplesTotal)
			if err == nil {
				fmt.Fprintf(stderr, "index build: %s, blocks %d/%d, tuples %d/%d, load %.1f\n", phase, blocks, blocksTotal, tuples, tuplesTotal, loadAvg())
			}
		}
	}()
	t0 := time.Now()
	built, err := pg.BuildIndexes(ctx, opts)
	for _, b := range built {
		res["index_build_"+b.Name+"_s"] = round4(b.Took.Seconds())
		fmt.Fprintf(stderr, "built %s in %s (load %.1f)\n", b.Name, b.Took.Round(time.Millisecond), loadAvg())
	}
	if err != nil {
		return err
	}
	if len(built) > 0 {
		res["index_build_s"] = round4(time.Since(t0).Seconds())
		res["index_build_workers"], res["index_build_memory"] = opts.Workers, opts.MaintenanceWorkMem
		res["load_avg_index_build"] = loadAvg()
	}
	return nil
}

// denseRecall measures the engine's semantic recall@10 against the exact
// top 10 of each query, without and with the filter, into res (keys
// prefixed with prefix).
func denseRecall(ctx context.Context, eng *retrieval.Engine, rq []string, filter []domain.MetadataFilter, exact, exactFiltered [][]chunkRef, res map[string]any, prefix string) error {
	for _, filtered := range []bool{false, true} {
		w, want, name := domain.Wishlist{Mode: domain.ModeSemantic}, exact, prefix+"dense_recall_at_10"
		if filtered {
			w.Metadata, want, name = filter, exactFiltered, prefix+"dense_recall_at_10_filtered"
		}
		found, total := 0, 0
		for i, q := range rq {
			hits, err := eng.Search(ctx, scaleCapsule, domain.Query{Text: q, Limit: 10, Wishlist: w})
			if err != nil {
				return err
			}
			in := map[chunkRef]bool{}
			for _, r := range want[i] {
				in[r] = true
			}
			for _, h := range hits {
				if in[chunkRef{h.Item.ID, h.Idx}] {
					found++
				}
			}
			total += len(want[i])
		}
		if total > 0 {
			res[name] = round4(float64(found) / float64(total))
		}
	}
	return nil
}

// renamed is an embedder reporting another model id.
type renamed struct {
	capsule.Embedder
	id string
}

func (r renamed) ModelID() string { return r.id }

// scalePassages reads the SciFact and HotpotQA passages (title and text),
// each distinct text once: a capsule holds identical bytes as one item
// (docs/ingestion.md, item identity), so a repeated passage would make two
// of the bench's items one and lose the first one's metadata.
func scalePassages(dirs ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		docs, err := readBEIRCorpus(filepath.Join(d, "corpus.jsonl.gz"), 0, nil)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			if !seen[doc.text] {
				seen[doc.text] = true
				out = append(out, doc.text)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no passages read")
	}
	return out, nil
}

// scaleQueries reads n queries, alternating between the data sets, in id
// order; when they hold fewer distinct queries, the list repeats.
func scaleQueries(scifact, hotpot string, n int) ([]string, error) {
	var lists [][]string
	longest := 0
	for _, d := range []string{scifact, hotpot} {
		qs, err := readBEIRQueries(filepath.Join(d, "queries.jsonl.gz"))
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(qs))
		for id := range qs {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var l []string
		for _, id := range ids {
			l = append(l, qs[id])
		}
		lists = append(lists, l)
		longest = max(longest, len(l))
	}
	var distinct []string
	seen := map[string]bool{}
	for i := 0; i < longest && len(distinct) < n; i++ {
		for _, l := range lists {
			if i < len(l) && len(distinct) < n && !seen[l[i]] {
				seen[l[i]] = true
				distinct = append(distinct, l[i])
			}
		}
	}
	if len(distinct) == 0 {
		return nil, errors.New("no queries read")
	}
	out := make([]string, n)
	for i := range out {
		out[i] = distinct[i%len(distinct)]
	}
	return out, nil
}

// passageVariant is passage p's v-th variation: v 0 is the passage; later ones
// drop about a fifth of its words (which ones depends on v) and end with the
// first sentence of another passage, so that no two chunks are the same.
func passageVariant(passages []string, p, v int) string {
	if v == 0 {
		return passages[p]
	}
	words := strings.Fields(passages[p])
	kept := make([]string, 0, len(words))
	for i, w := range words {
		if mix(uint64(p), uint64(v), uint64(i))%5 != 0 {
			kept = append(kept, w)
		}
	}
	other := passages[int(mix(uint64(p), uint64(v), 1<<40)%uint64(len(passages)))]
	if i := strings.IndexAny(other, ".\n"); i > 0 {
		other = other[:i+1]
	}
	return strings.Join(kept, " ") + " " + other
}

// mix hashes three numbers.
func mix(a, b, c uint64) uint64 {
	h := fnv.New64a()
	var buf [24]byte
	for i, x := range []uint64{a, b, c} {
		for j := range 8 {
			buf[i*8+j] = byte(x >> (8 * j))
		}
	}
	h.Write(buf[:])
	return h.Sum64()
}

// buildScale adds items of passagesPerItem passage variants, numbered from
// first, until the chunker's count, from chunks, reaches target, then waits
// until no item of the capsule is queued or indexing (an earlier run's
// included). Item i has metadata group = i mod 100 (group 0: the 1% filter).
func buildScale(ctx context.Context, svc *capsule.Service, st capsule.Store, passages []string, first, chunks, target int, stderr io.Writer) (time.Duration, error) {
	start := time.Now()
	added := 0
	for i := first; chunks < target; i++ {
		parts := make([]string, passagesPerItem)
		for j := range parts {
			n := i*passagesPerItem + j
			parts[j] = passageVariant(passages, n%len(passages), n/len(passages))
		}
		text := strings.Join(parts, "\n\n")
		chunks += estimateChunks(text)
		_, _, err := svc.AddItem(ctx, scaleCapsule, capsule.NewItem{Kind: domain.ItemText, Text: text,
			URI: fmt.Sprintf("scale-%08d", i), Metadata: map[string]any{"group": float64(i % 100), "source": "bench-scale"}})
		if err != nil {
			return 0, err
		}
		if added++; added%5000 == 0 {
			fmt.Fprintf(stderr, "added %d items (~%d chunks in the capsule) in %s, CPU %.0f s, load %.1f\n", added, chunks, time.Since(start).Round(time.Second), cpuTime().Seconds(), loadAvg())
		}
	}
	for last := time.Now(); ; {
		pending := 0
		for _, status := range []domain.ItemStatus{domain.StatusQueued, domain.StatusIndexing} {
			its, err := st.ListItems(ctx, scaleCapsule, status, "", 1)
			if err != nil {
				return 0, err
			}
			pending += len(its)
		}
		if pending == 0 {
			break
		}
		if time.Since(last) > time.Minute {
			c, err := st.GetCapsule(ctx, scaleCapsule)
			if err != nil {
				return 0, err
			}
			fmt.Fprintf(stderr, "indexing: %d chunks indexed after %s, load %.1f\n", c.ChunkCount, time.Since(start).Round(time.Second), loadAvg())
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	failed, err := st.ListItems(ctx, scaleCapsule, domain.StatusFailed, "", 1)
	if err != nil {
		return 0, err
	}
	if len(failed) > 0 {
		return 0, fmt.Errorf("item %s failed: %s", failed[0].ID, failed[0].Error)
	}
	return time.Since(start), nil
}

// startProfile starts a CPU profile written to path (none when path is
// empty) and returns the function that ends it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes the heap profile of the last garbage collection
// to path (nothing when path is empty).
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// estimateChunks is about how many chunks the service cuts text into
// (about 4/3 tokens a word, chunks of up to 200 with some overlap,
// paragraphs merged): the capsule's real count is what the bench reports.
func estimateChunks(text string) int {
	tokens := len(strings.Fields(text)) * 4 / 3
	return max(1, (tokens+chunkTokensEstimate-1)/chunkTokensEstimate)
}

// chunkTokensEstimate is the tokens per chunk estimateChunks assumes.
const chunkTokensEstimate = 170

// timeQueries runs each query once (after three unmeasured ones) and
// returns their latencies, the process's CPU time over them (all threads:
// on a loaded machine it shows the work that wall time hides; on
// PostgreSQL the database's own is not in it) and how many found nothing.
func timeQueries(ctx context.Context, eng *retrieval.Engine, qs []string, w domain.Wishlist) ([]time.Duration, time.Duration, int, error) {
	for _, q := range qs[:min(3, len(qs))] {
		if _, err := eng.Search(ctx, scaleCapsule, domain.Query{Text: q, Limit: 10, Wishlist: w}); err != nil {
			return nil, 0, 0, err
		}
	}
	var lat []time.Duration
	empty := 0
	cpu0 := cpuTime()
	for _, q := range qs {
		t0 := time.Now()
		hits, err := eng.Search(ctx, scaleCapsule, domain.Query{Text: q, Limit: 10, Wishlist: w})
		if err != nil {
			return nil, 0, 0, err
		}
		lat = append(lat, time.Since(t0))
		if len(hits) == 0 {
			empty++
		}
	}
	return lat, cpuTime() - cpu0, empty, nil
}

// chunkRef names one chunk.
type chunkRef struct {
	item string
	idx  int
}

// filterItems returns the ids of the capsule's searchable items that pass
// the metadata filter.
func filterItems(ctx context.Context, st capsule.Store, filter []domain.MetadataFilter) (map[string]bool, error) {
	items, err := st.SearchableItems(ctx, scaleCapsule)
	if err != nil {
		return nil, err
	}
	pred := retrieval.Compile(domain.Wishlist{Metadata: filter})
	out := map[string]bool{}
	for i := range items {
		if pred == nil || pred(&items[i]) {
			out[items[i].ID] = true
		}
	}
	return out, nil
}

// scoredRef is a chunk and its cosine with a query.
type scoredRef struct {
	s float32
	r chunkRef
}

// exactTop10 reads every stored vector once and returns, for each query,
// the 10 chunks of highest cosine, over all chunks and over those of the
// items in inFilter.
func exactTop10(ctx context.Context, st capsule.Store, qs [][]float32, inFilter map[string]bool) (all, filtered [][]chunkRef, err error) {
	worse := func(a, b scoredRef) bool {
		if a.s != b.s {
			return a.s < b.s
		}
		if a.r.item != b.r.item {
			return a.r.item > b.r.item
		}
		return a.r.idx > b.r.idx
	}
	tops := make([]*rank.TopK[scoredRef], len(qs))
	ftops := make([]*rank.TopK[scoredRef], len(qs))
	for i := range qs {
		tops[i], ftops[i] = rank.NewTopK(10, worse), rank.NewTopK(10, worse)
	}
	err = st.ChunkVectors(ctx, scaleCapsule, func(id string, idx int, vec []float32) error {
		in := inFilter[id]
		for i, q := range qs {
			if len(vec) != len(q) {
				continue
			}
			s := scoredRef{vecmath.Dot(q, vec), chunkRef{id, idx}}
			tops[i].Offer(s)
			if in {
				ftops[i].Offer(s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	refs := func(t *rank.TopK[scoredRef]) []chunkRef {
		k := t.Kept()
		var out []chunkRef
		for _, s := range k {
			out = append(out, s.r)
		}
		return out
	}
	for i := range qs {
		all = append(all, refs(tops[i]))
		filtered = append(filtered, refs(ftops[i]))
	}
	return all, filtered, nil
}

// lookupEmbedder answers texts embedded in advance from memory, others
// through fallback; safe for concurrent use.
type lookupEmbedder struct {
	mu       sync.Mutex
	vecs     map[string][]float32
	fallback capsule.Embedder
}

func (l *lookupEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []int
	l.mu.Lock()
	for i, t := range texts {
		if v, ok := l.vecs[t]; ok {
			out[i] = v
		} else {
			miss = append(miss, i)
		}
	}
	l.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	ask := make([]string, len(miss))
	for j, i := range miss {
		ask[j] = texts[i]
	}
	vs, err := l.fallback.Embed(ctx, ask)
	if err != nil {
		return nil, err
	}
	for j, i := range miss {
		out[i] = vs[j]
	}
	return out, nil
}

// scaleServerConfig is what the server phase needs.
type scaleServerConfig struct {
	bin      string
	store    string
	isPG     bool
	dir      string
	replicas int
	model    string
	queries  []string
	filter   []domain.MetadataFilter
	keys     auth.Store
	emb      *lookupEmbedder
	log      *slog.Logger
}

// scaleServers serves the embedder as an OpenAI-compatible embeddings
// endpoint (the query vectors computed in advance are looked up, so a
// server's query embedding is a loopback round trip, measured alone), starts
// the server processes one after the other, each timed from its start to its
// first answer, then sends the queries over HTTP, round robin, and reads
// each server's resident memory.
func scaleServers(ctx context.Context, res map[string]any, cfg scaleServerConfig, stderr io.Writer) error {
	bin := cfg.bin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		bin = exe
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	embedURL := "http://" + l.Addr().String()
	hs := &http.Server{Handler: embeddingsHandler(cfg.emb, cfg.model), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(l)
	defer hs.Close()

	_, key, err := auth.New(cfg.keys, time.Now, cfg.log).CreateKey(ctx, auth.NewKey{Name: "bench scale", Scopes: []domain.Scope{domain.ScopeAdmin}})
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	var servers []*scaleServer
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	var cold, coldCPU []float64
	for r := range cfg.replicas {
		args := []string{"serve", "--addr", "127.0.0.1:0", "--data", cfg.dir, "--embedder", "http", "--embed-url", embedURL + "/v1",
			"--embed-model", cfg.model, "--model-fetch=false", "--rate-limit-rpm", "0", "--log-level", "info"}
		if cfg.isPG {
			args = append(args, "--store", cfg.store)
		}
		s, err := startScaleServer(ctx, bin, args)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		body := queryBody(cfg.queries[0], domain.ModeHybrid, nil)
		for {
			status, err := s.query(ctx, client, key, body)
			if err == nil && status == http.StatusOK {
				break
			}
			if err == nil && status != http.StatusServiceUnavailable && status != http.StatusBadGateway {
				return fmt.Errorf("server %d: first query: status %d", r+1, status)
			}
			if time.Since(s.started) > 10*time.Minute {
				return fmt.Errorf("server %d: no answer after 10 minutes (%v): %s", r+1, err, s.stderr.tail())
			}
			time.Sleep(5 * time.Millisecond)
		}
		cold = append(cold, round4(time.Since(s.started).Seconds()))
		coldCPU = append(coldCPU, round4(serversCPU([]*scaleServer{s}).Seconds()))
		fmt.Fprintf(stderr, "server %d answered its first query %.2fs after its start (load %.1f)\n", r+1, cold[len(cold)-1], loadAvg())
	}
	res["server_cold_start_s"] = cold
	res["server_cold_start_cpu_s"] = coldCPU // the server's CPU time until then (10 ms ticks)
	res["server_first_answer"] = "from the server process's start to the HTTP 200 of its first hybrid query (limit 10, unfiltered), index load included, the query sent again every 5 ms until answered"

	// The servers' background work after their first load (the check of a
	// mapped vectors file, the graph read) runs for seconds: wait until
	// their CPU stays still for a second, so the queries below are timed,
	// and their server CPU counted, alone.
	settle := time.Now()
	for prev := serversCPU(servers); time.Since(settle) < 5*time.Minute; {
		time.Sleep(time.Second)
		cur := serversCPU(servers)
		if cur-prev <= 20*time.Millisecond {
			break
		}
		prev = cur
	}
	res["server_settle_s"] = round4(time.Since(settle).Seconds())
	fmt.Fprintf(stderr, "servers settled %.0fs after their first answers\n", time.Since(settle).Seconds())

	// The embedding lookup alone, as the servers' embedder calls it.
	var embedLat []time.Duration
	for _, q := range cfg.queries {
		b, _ := json.Marshal(map[string]any{"model": cfg.model, "input": []string{q}, "encoding_format": "float"})
		t0 := time.Now()
		resp, err := client.Post(embedURL+"/v1/embeddings", "application/json", bytes.NewReader(b))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		embedLat = append(embedLat, time.Since(t0))
	}
	res["http_embed_lookup_p50_ms"] = pct(embedLat, 50)
	for _, filtered := range []bool{false, true} {
		var filter []domain.MetadataFilter
		name := "http_hybrid"
		if filtered {
			filter, name = cfg.filter, "http_hybrid_filtered"
		}
		var lat []time.Duration
		cpu0 := serversCPU(servers)
		for i, q := range cfg.queries {
			s := servers[i%len(servers)]
			t0 := time.Now()
			status, err := s.query(ctx, client, key, queryBody(q, domain.ModeHybrid, filter))
			if err != nil {
				return err
			}
			if status != http.StatusOK {
				return fmt.Errorf("HTTP query: status %d", status)
			}
			lat = append(lat, time.Since(t0))
		}
		res[name+"_p50_ms"], res[name+"_p99_ms"], res[name+"_max_ms"] = pct(lat, 50), pct(lat, 99), pct(lat, 100)
		res[name+"_server_cpu_ms"] = perQueryMS(serversCPU(servers)-cpu0, len(lat))
		fmt.Fprintf(stderr, "%-18s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms over HTTP, server CPU %.2f ms/query (load %.1f)\n", name, pct(lat, 50), pct(lat, 99), pct(lat, 100), res[name+"_server_cpu_ms"], loadAvg())
	}
	var rss, hwm []float64
	for _, s := range servers {
		r, h := procMemMB(s.cmd.Process.Pid)
		rss, hwm = append(rss, r), append(hwm, h)
	}
	res["server_rss_mb"], res["server_rss_peak_mb"] = rss, hwm
	if !cfg.isPG {
		sqliteMemory(res, "server_", servers[0].cmd.Process.Pid)
	}
	return nil
}

// queryBody is a query request of limit 10 with a metadata filter of eq
// conditions.
func queryBody(q string, mode domain.SearchMode, filter []domain.MetadataFilter) []byte {
	w := map[string]any{"mode": string(mode)}
	if len(filter) > 0 {
		m := map[string]any{}
		for _, f := range filter {
			m[f.Key] = f.Value
		}
		w["metadata"] = m
	}
	b, _ := json.Marshal(map[string]any{"query": q, "limit": 10, "wishlist": w})
	return b
}

// embeddingsHandler serves POST /v1/embeddings from emb.
func embeddingsHandler(emb *lookupEmbedder, model string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		vs, err := emb.Embed(r.Context(), req.Input)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string  `json:"object"`
			Model  string  `json:"model"`
			Data   []datum `json:"data"`
		}{Object: "list", Model: model}
		for i, v := range vs {
			out.Data = append(out.Data, datum{"embedding", i, v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	return mux
}

// scaleServer is one `capsuled serve` process.
type scaleServer struct {
	cmd     *exec.Cmd
	url     string
	started time.Time
	stderr  *tailBuffer
}

var listenLine = regexp.MustCompile(`addr=http://(127\.0\.0\.1:\d+)`)

// startScaleServer starts the process and waits until it listens.
func startScaleServer(ctx context.Context, bin string, args []string) (*scaleServer, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	s := &scaleServer{cmd: cmd, stderr: &tailBuffer{}}
	cmd.Stderr, cmd.Stdout = s.stderr, io.Discard
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	for {
		if m := listenLine.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = "http://" + m[1]
			return s, nil
		}
		if time.Since(s.started) > 5*time.Minute {
			s.stop()
			return nil, fmt.Errorf("server did not listen within 5 minutes: %s", s.stderr.tail())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (s *scaleServer) query(ctx context.Context, client *http.Client, key string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/capsules/"+scaleCapsule+"/query", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (s *scaleServer) stop() {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// tailBuffer keeps what a process writes, up to 1 MiB; safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) < 1<<20 {
		t.buf = append(t.buf, p...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (t *tailBuffer) tail() string {
	s := t.String()
	return s[max(0, len(s)-2000):]
}

// procMemMB is a process's resident memory and its peak (VmRSS, VmHWM).
func procMemMB(pid int) (rss, peak float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fld := strings.Fields(sc.Text())
		if len(fld) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fld[1], 64)
		switch fld[0] {
		case "VmRSS:":
			rss = math.Round(kb/1024*10) / 10
		case "VmHWM:":
			peak = math.Round(kb/1024*10) / 10
		}
	}
	return rss, peak
}

// serversCPU is the server processes' CPU time together (user and
// system, from /proc/PID/stat, in clock ticks of 10 ms).
func serversCPU(servers []*scaleServer) time.Duration {
	var total time.Duration
	for _, s := range servers {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
		if err != nil {
			continue
		}
		// Fields after the command name, which ends with ")": state is the
		// first, utime the 12th, stime the 13th.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+st) * 10 * time.Millisecond
	}
	return total
}

// loadAvg is the 1-minute load average.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}

// sqliteGraphEfs measures, for each graph beam width, recall@10 against
// the exact top 10 and the latency of the semantic and hybrid modes, each
// through a new engine over the same store (it maps the capsule's vectors
// file and reads its graph file, which the first engine wrote).
func sqliteGraphEfs(ctx context.Context, st capsule.Store, emb retrieval.QueryEmbedder, dim int, graphDir string, efs []int, modes []domain.SearchMode,
	qs, rq []string, filter []domain.MetadataFilter, exact, exactFiltered [][]chunkRef, res map[string]any, stderr io.Writer) error {
	for _, ef := range efs {
		e := retrieval.New(st, emb, dim, retrieval.Config{GraphEf: ef, GraphDir: graphDir})
		err := func() error {
			defer e.Close()
			if _, err := e.Search(ctx, scaleCapsule, domain.Query{Text: qs[0], Limit: 10, Wishlist: domain.Wishlist{Mode: domain.ModeSemantic}}); err != nil {
				return err
			}
			if err := e.GraphReady(ctx, scaleCapsule); err != nil {
				return err
			}
			prefix := fmt.Sprintf("graph_ef%d_", ef)
			if len(rq) > 0 {
				if err := denseRecall(ctx, e, rq, filter, exact, exactFiltered, res, prefix); err != nil {
					return err
				}
			}
			for _, mode := range modes {
				if mode == domain.ModeKeyword {
					continue
				}
				for _, filtered := range []bool{false, true} {
					w, name := domain.Wishlist{Mode: mode}, prefix+string(mode)
					if filtered {
						w.Metadata, name = filter, name+"_filtered"
					}
					lat, cpu, _, err := timeQueries(ctx, e, qs, w)
					if err != nil {
						return err
					}
					res[name+"_p50_ms"], res[name+"_p99_ms"], res[name+"_cpu_ms"] = pct(lat, 50), pct(lat, 99), perQueryMS(cpu, len(lat))
				}
			}
			fmt.Fprintf(stderr, "graph ef %d: recall@10 %v (filtered %v); semantic p50 %v ms, %v CPU-ms; hybrid p50 %v ms, %v CPU-ms; load %.1f\n", ef,
				res[prefix+"dense_recall_at_10"], res[prefix+"dense_recall_at_10_filtered"], res[prefix+"semantic_p50_ms"], res[prefix+"semantic_cpu_ms"],
				res[prefix+"hybrid_p50_ms"], res[prefix+"hybrid_cpu_ms"], loadAvg())
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// sqliteMemory records a process's resident memory by kind (RssAnon: the
// heap and other private memory; RssFile: mapped files' pages resident now,
// such as vectors files, which the kernel may drop and read again) and,
// for this process, the Go heap in use.
func sqliteMemory(res map[string]any, prefix string, pid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "RssAnon:":
			res[prefix+"rss_anon_mb"] = math.Round(kb/1024*10) / 10
		case "RssFile:":
			res[prefix+"rss_file_mb"] = math.Round(kb/1024*10) / 10
		}
	}
	if pid == os.Getpid() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		res[prefix+"go_heap_inuse_mb"] = math.Round(float64(ms.HeapInuse)/(1<<20)*10) / 10
		res[prefix+"go_sys_mb"] = math.Round(float64(ms.Sys)/(1<<20)*10) / 10
	}
}

// widths parses the comma-separated list of flag --name, each a number from
// 1 to most.
func widths(name, list string, most int) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("--%s: %q is not a number from 1 to %d", name, f, most)
		}
		out = append(out, n)
	}
	return out, nil
}

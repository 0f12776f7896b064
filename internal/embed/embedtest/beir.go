package embedtest

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SciFactEnv names the BEIR SciFact folder (corpus.jsonl[.gz],
// queries.jsonl[.gz], qrels/test.tsv) for the faithfulness check.
const SciFactEnv = "CAPSULED_SCIFACT"

// SciFactDir returns $CAPSULED_SCIFACT or skips the test.
func SciFactDir(t testing.TB) string {
	return need(t, SciFactEnv, "a BEIR SciFact folder, e.g. /work/shared/data/beir/scifact")
}

// BEIR is a loaded BEIR dataset: documents, the queries that have
// judgements in the split, and the judgements.
type BEIR struct {
	DocIDs  []string
	Docs    []string // title + " " + text, trimmed, as BEIR's SentenceBERT model builds them
	QueryID []string
	Queries []string
	Qrels   map[string]map[string]int // query id → doc id → relevance
}

// LoadBEIR reads dir with the qrels of split (e.g. "test").
func LoadBEIR(dir, split string) (*BEIR, error) {
	b := &BEIR{Qrels: map[string]map[string]int{}}
	qr, err := os.ReadFile(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, fmt.Errorf("beir: %w", err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(qr)), "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if i == 0 && f[0] == "query-id" {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("beir: qrels line %d: %q", i+1, line)
		}
		score, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("beir: qrels line %d: %w", i+1, err)
		}
		if b.Qrels[f[0]] == nil {
			b.Qrels[f[0]] = map[string]int{}
		}
		b.Qrels[f[0]][f[1]] = score
	}
	err = readJSONL(dir, "corpus", func(raw []byte) error {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		b.DocIDs = append(b.DocIDs, d.ID)
		b.Docs = append(b.Docs, strings.TrimSpace(d.Title+" "+d.Text))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = readJSONL(dir, "queries", func(raw []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &q); err != nil {
			return err
		}
		if _, ok := b.Qrels[q.ID]; ok {
			b.QueryID = append(b.QueryID, q.ID)
			b.Queries = append(b.Queries, q.Text)
		}
		return nil
	})
	return b, err
}

func readJSONL(dir, name string, fn func([]byte) error) error {
	var r io.Reader
	f, err := os.Open(filepath.Join(dir, name+".jsonl"))
	if err != nil {
		f, err = os.Open(filepath.Join(dir, name+".jsonl.gz"))
		if err != nil {
			return fmt.Errorf("beir: %w", err)
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("beir: %s: %w", name, err)
		}
		r = gz
	} else {
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("beir: %s: %w", name, err)
		}
	}
	return sc.Err()
}

// NDCGAt is the mean nDCG@k over queries of ranked doc ids (linear gain, as
// pytrec_eval computes it for BEIR).
func NDCGAt(k int, qrels map[string]map[string]int, ranked map[string][]string) float64 {
	var sum float64
	n := 0
	for qid, rel := range qrels {
		n++
		var dcg float64
		for i, d := range ranked[qid] {
			if i >= k {
				break
			}
			dcg += float64(rel[d]) / math.Log2(float64(i+2))
		}
		var ideal []int
		for _, r := range rel {
			if r > 0 {
				ideal = append(ideal, r)
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(ideal)))
		var idcg float64
		for i, r := range ideal {
			if i >= k {
				break
			}
			idcg += float64(r) / math.Log2(float64(i+2))
		}
		if idcg > 0 {
			sum += dcg / idcg
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// DenseResult is what DenseEval measured.
type DenseResult struct {
	NDCG10     float64
	Docs       int
	Queries    int
	EmbedDocs  time.Duration
	EmbedQuery time.Duration
}

// DenseEval embeds the corpus and the queries with e and ranks documents by
// exact cosine (dot product of unit vectors): dense-only retrieval.
func DenseEval(ctx context.Context, t testing.TB, e Embedder, b *BEIR) (DenseResult, error) {
	res := DenseResult{Docs: len(b.Docs), Queries: len(b.Queries)}
	start := time.Now()
	docs, err := embedAll(ctx, t, e, b.Docs, "documents")
	if err != nil {
		return res, err
	}
	res.EmbedDocs = time.Since(start)
	start = time.Now()
	qs, err := embedAll(ctx, t, e, b.Queries, "queries")
	if err != nil {
		return res, err
	}
	res.EmbedQuery = time.Since(start)
	ranked := map[string][]string{}
	type hit struct {
		i int
		s float64
	}
	for qi, q := range qs {
		hits := make([]hit, len(docs))
		for di, d := range docs {
			var s float64
			for j := range q {
				s += float64(q[j]) * float64(d[j])
			}
			hits[di] = hit{di, s}
		}
		sort.Slice(hits, func(a, c int) bool {
			if hits[a].s != hits[c].s {
				return hits[a].s > hits[c].s
			}
			return b.DocIDs[hits[a].i] < b.DocIDs[hits[c].i]
		})
		for _, h := range hits[:min(100, len(hits))] {
			ranked[b.QueryID[qi]] = append(ranked[b.QueryID[qi]], b.DocIDs[h.i])
		}
	}
	res.NDCG10 = NDCGAt(10, b.Qrels, ranked)
	return res, nil
}

func embedAll(ctx context.Context, t testing.TB, e Embedder, texts []string, what string) ([][]float32, error) {
	const step = 256
	out := make([][]float32, 0, len(texts))
	last := time.Now()
	for i := 0; i < len(texts); i += step {
		vs, err := e.Embed(ctx, texts[i:min(i+step, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
		if time.Since(last) > 30*time.Second {
			t.Logf("embedded %d/%d %s", len(out), len(texts), what)
			last = time.Now()
		}
	}
	return out, nil
}

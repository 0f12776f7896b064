package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMultiHopRAGSets reads the tiny MultiHop-RAG folder: every article is
// a document (titled: title, source and date, then the body; untitled: the
// body alone), the null query is left out, and each question's gold
// documents are the articles its evidence comes from.
func TestMultiHopRAGSets(t *testing.T) {
	t.Parallel()
	for _, untitled := range []bool{false, true} {
		sets, err := multiHopRAGSets("testdata/multihoprag", 0, untitled)
		if err != nil {
			t.Fatal(err)
		}
		set := sets[0]
		if want := map[bool]string{false: "multihop-rag", true: "multihop-rag-untitled"}[untitled]; set.capsule != want {
			t.Errorf("capsule %q, want %q", set.capsule, want)
		}
		if len(set.docs) != 5 {
			t.Fatalf("%d documents, want 5", len(set.docs))
		}
		first := set.docs[1].text
		titled := "Bluewater Capital closes its third fund\nMarket Wire, 2023-10-20\n\nBluewater Capital, the investor"
		if untitled && (strings.Contains(first, "closes its third fund") || !strings.HasPrefix(first, "Bluewater Capital, the investor")) {
			t.Errorf("untitled document: %q", first)
		}
		if !untitled && !strings.HasPrefix(first, titled) {
			t.Errorf("titled document: %q, want it to start %q", first, titled)
		}
		var ids, kinds []string
		var hops []int
		for _, q := range set.questions {
			ids, kinds, hops = append(ids, q.id), append(kinds, q.kind), append(hops, q.hops)
			if len(q.rel) != q.hops {
				t.Errorf("%s: %d gold documents, hop count %d", q.id, len(q.rel), q.hops)
			}
		}
		if got := strings.Join(ids, " "); got != "mh0000 mh0002 mh0003" {
			t.Errorf("question ids %s, want mh0000 mh0002 mh0003 (the null query mh0001 left out)", got)
		}
		if got := strings.Join(kinds, " "); got != "inference inference temporal" {
			t.Errorf("kinds %s", got)
		}
		if hops[0] != 2 || hops[1] != 3 || hops[2] != 4 {
			t.Errorf("hops %v, want [2 3 4]", hops)
		}
		if q := set.questions[0]; q.rel["mh0000"] != 1 || q.rel["mh0001"] != 1 {
			t.Errorf("gold of the first question: %v, want mh0000 and mh0001", q.rel)
		}
	}
	sets, err := multiHopRAGSets("testdata/multihoprag", 2, false)
	if err != nil || len(sets[0].questions) != 2 || len(sets[0].docs) != 5 {
		t.Errorf("--limit 2: %v; want 2 questions over all 5 articles", err)
	}
}

// TestMultiHopRAGSetsErrors: a folder that is not MultiHop-RAG's format is
// refused, saying why.
func TestMultiHopRAGSetsErrors(t *testing.T) {
	t.Parallel()
	const article = `{"title":"T","source":"S","published_at":"2023-10-01T00:00:00+00:00","url":"u1","body":"Body."}`
	const question = `{"query":"Q?","question_type":"inference_query","evidence_list":[{"url":"u1"}]}`
	for name, files := range map[string][2]string{
		"no corpus (not found)":       {"", "[" + question + "]"},
		"no questions (not found)":    {"[" + article + "]", ""},
		"corpus not JSON":             {`{`, "[" + question + "]"},
		"corpus not an array":         {`{"title":"T"}`, "[" + question + "]"},
		"questions of another format": {"[" + article + "]", `[{"query":"Q?","evidence_list":"u1"}]`},
		"article without url":         {`[{"title":"T","body":"B."}]`, "[" + question + "]"},
		"url twice":                   {"[" + article + "," + article + "]", "[" + question + "]"},
		"empty article":               {`[{"url":"u1","body":" "}]`, "[" + question + "]"},
		"evidence not in the corpus":  {"[" + article + "]", `[{"query":"Q?","evidence_list":[{"url":"u2"}]}]`},
		"question without text":       {"[" + article + "]", `[{"query":" ","evidence_list":[{"url":"u1"}]}]`},
		"no question with evidence":   {"[" + article + "]", `[{"query":"Q?","question_type":"null_query","evidence_list":[]}]`},
	} {
		dir := t.TempDir()
		for i, body := range files {
			if body == "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, []string{mhragCorpusFile, mhragQueriesFile}[i]), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := multiHopRAGSets(dir, 0, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if code, _, stderr := runBench(t, "agent", "--embedder", "off", "--multihop-rag", "testdata/multihoprag", "--2wiki", "testdata/2wiki_tiny.json"); code == 0 || !strings.Contains(stderr, "--multihop-rag") {
		t.Errorf("two sets at once: exit %d, %s", code, stderr)
	}
}

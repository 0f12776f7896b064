package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MultiHop-RAG (Tang and Yang, COLM 2024): 609 English news articles
// (September to December 2023) and 2,556 questions, each listing the
// evidence facts it needs with the article (url) each comes from. The
// files, in the data set's own format and names:
//
//	corpus.json       [{"title","author","source","published_at","category","url","body"}]
//	MultiHopRAG.json  [{"query","answer","question_type","evidence_list":[{"url","title","fact",…}]}]
const (
	mhragCorpusFile  = "corpus.json"
	mhragQueriesFile = "MultiHopRAG.json"
)

// multiHopRAGSets reads a MultiHop-RAG folder: one capsule holds every
// article (one item each, chunked by the service as any long document),
// and each question's relevant documents are the articles its evidence
// facts come from; its hop count is their number (2 to 4). A titled article
// is its title, a line with its source and publication date, a blank line
// and its body; untitled, the body alone. Questions without evidence (the
// set's null_query type: their answer is that the corpus cannot say) are
// left out, as recall has nothing to count for them. The question ids are
// mh0000, mh0001, … in file order (null queries keep their number), and the
// kind is question_type without its _query suffix.
func multiHopRAGSets(dir string, limit int, untitled bool) ([]benchSet, error) {
	var corpus []struct {
		Title       string `json:"title"`
		Source      string `json:"source"`
		PublishedAt string `json:"published_at"`
		URL         string `json:"url"`
		Body        string `json:"body"`
	}
	if err := readJSONFile(filepath.Join(dir, mhragCorpusFile), &corpus); err != nil {
		return nil, err
	}
	var qs []struct {
		Query    string `json:"query"`
		Type     string `json:"question_type"`
		Evidence []struct {
			URL string `json:"url"`
		} `json:"evidence_list"`
	}
	if err := readJSONFile(filepath.Join(dir, mhragQueriesFile), &qs); err != nil {
		return nil, err
	}
	name := "multihop-rag"
	if untitled {
		name = "multihop-rag-untitled"
	}
	set := benchSet{name: name, capsule: name}
	ids := make(map[string]string, len(corpus)) // url → document id
	for i, a := range corpus {
		if a.URL == "" {
			return nil, fmt.Errorf("%s: article %d has no url", filepath.Join(dir, mhragCorpusFile), i)
		}
		if _, dup := ids[a.URL]; dup {
			return nil, fmt.Errorf("%s: url %s twice", filepath.Join(dir, mhragCorpusFile), a.URL)
		}
		id := fmt.Sprintf("mh%04d", i)
		ids[a.URL] = id
		text := strings.TrimSpace(a.Body)
		if !untitled {
			byline := a.Source
			if len(a.PublishedAt) >= 10 { // "2023-11-27 08:45:59…": the date
				byline += ", " + a.PublishedAt[:10]
			}
			text = strings.TrimSpace(a.Title) + "\n" + strings.TrimSpace(byline) + "\n\n" + text
		}
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("%s: article %s is empty", filepath.Join(dir, mhragCorpusFile), a.URL)
		}
		set.docs = append(set.docs, beirDoc{id, text})
	}
	for i, q := range qs {
		if limit > 0 && len(set.questions) >= limit {
			break
		}
		rel := map[string]int{}
		for _, e := range q.Evidence {
			id, ok := ids[e.URL]
			if !ok {
				return nil, fmt.Errorf("%s: question %d: evidence from %q, which is not in %s", filepath.Join(dir, mhragQueriesFile), i, e.URL, mhragCorpusFile)
			}
			rel[id] = 1
		}
		if len(rel) == 0 { // null_query: nothing to retrieve
			continue
		}
		if strings.TrimSpace(q.Query) == "" {
			return nil, fmt.Errorf("%s: question %d has no text", filepath.Join(dir, mhragQueriesFile), i)
		}
		set.questions = append(set.questions, benchQuestion{id: fmt.Sprintf("mh%04d", i), text: q.Query,
			kind: strings.TrimSuffix(q.Type, "_query"), rel: rel, hops: len(rel)})
	}
	if len(set.questions) == 0 {
		return nil, fmt.Errorf("%s: no questions with evidence", filepath.Join(dir, mhragQueriesFile))
	}
	return []benchSet{set}, nil
}

// readJSONFile decodes the JSON file at path into v, naming the file in
// any error.
func readJSONFile(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: not the MultiHop-RAG format: %w", path, err)
	}
	return nil
}

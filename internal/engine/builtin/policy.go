package builtin

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"capsuled/internal/domain"
)

type call struct{ name, args string }

// decide builds the reply to the state.
func (e *Engine) decide(st *state, req *domain.ChatRequest) domain.Choice {
	toolsOn := req.ToolStub && req.ToolChoice.Mode != domain.ToolChoiceNone
	if strings.TrimSpace(st.question) == "" {
		return domain.Choice{Reasoning: "There is no user question in the conversation, so there is nothing to search for.",
			Content: "Please ask a question.", FinishReason: domain.FinishStop}
	}
	if !toolsOn {
		ranked := e.rank(st)
		ids := e.reportIDs(st, ranked)
		if len(ids) == 0 {
			return domain.Choice{Reasoning: "Tool calls are off for this request and the conversation holds no search results, so I cannot rank documents.",
				Content: "I need to search to answer this; send the request with the tool stub to let me call tools.", FinishReason: domain.FinishStop}
		}
		return domain.Choice{Reasoning: fmt.Sprintf("Tool calls are off for this request, so I rank the %d documents already found by fused evidence.", len(ranked)),
			Content: "The most helpful documents, most helpful first: " + strings.Join(ids, ", "), FinishReason: domain.FinishStop}
	}
	if st.reported && req.ToolChoice.Mode != domain.ToolChoiceFunction && req.ToolChoice.Mode != domain.ToolChoiceRequired {
		return domain.Choice{Reasoning: "The helpful ids were already reported; the search is over.",
			Content: "Done: the helpful ids are reported above.", FinishReason: domain.FinishStop}
	}
	calls, why := e.plan(st, req)
	if len(calls) == 0 { // report
		calls, why = e.report(st, why)
	}
	if req.ToolChoice.Mode == domain.ToolChoiceFunction {
		name := req.ToolChoice.Function
		if role, ok := st.tools.role[name]; ok {
			name = role // the client's name for one of the four roles
		}
		calls, why = e.forced(st, name, calls, why)
	}
	if !req.ParallelToolCalls && len(calls) > 1 {
		calls = calls[:1]
		why += " Parallel tool calls are off, so I make one call now."
	}
	if len(calls) == 0 { // report_helpful_ids is not offered: answer in text
		ids := e.reportIDs(st, e.rank(st))
		return domain.Choice{Reasoning: why, Content: "The most helpful documents, most helpful first: " + strings.Join(ids, ", "), FinishReason: domain.FinishStop}
	}
	if len(st.tools.unmapped) > 0 {
		why += " " + unmappedNote(st.tools.unmapped)
	}
	out := domain.Choice{Reasoning: strings.TrimSpace(why), FinishReason: domain.FinishToolCalls}
	for i, c := range calls {
		name, args := c.name, c.args
		if rt, ok := st.tools.tool[c.name]; ok && rt != documented(c.name) {
			name, args = st.tools.callArgs(c.name, c)
		}
		out.ToolCalls = append(out.ToolCalls, domain.ToolCall{ID: callID(st.turns, i, name, args), Type: "function", Name: name, Arguments: args})
	}
	return out
}

// report returns the report_helpful_ids call, or none when the tool is not
// offered.
func (e *Engine) report(st *state, why string) ([]call, string) {
	ranked := e.rank(st)
	ids := e.reportIDs(st, ranked)
	if !st.tools.report {
		return nil, strings.TrimSpace(why + " report_helpful_ids is not among the tools, so I list the ids in my answer.")
	}
	b, _ := json.Marshal(struct {
		IDs []string `json:"ids"`
	}{nonNil(ids)})
	msg := fmt.Sprintf(" I report %d of the %d documents seen, ranked by fused evidence (rank fusion of every result list, coverage of the question's terms, and links between documents)", len(ids), len(st.docs))
	if len(ids) < min(e.cfg.ReportLimit, len(ranked)) && len(ids) > 0 {
		msg += fmt.Sprintf(", and leave out those whose evidence is below %.0f%% of the best one's (%.0f%% for a document linked to the chain)", 100*e.cfg.ReportCut, 100*e.cfg.ReportLinkCut)
	}
	msg += "."
	if len(ids) == 0 {
		msg = " No search returned any document, so I report no ids."
	}
	return []call{{ToolReport, string(b)}}, strings.TrimSpace(why + msg)
}

// forced makes the reply call the named function.
func (e *Engine) forced(st *state, name string, planned []call, why string) ([]call, string) {
	var out []call
	for _, c := range planned {
		if c.name == name {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		return out, why
	}
	note := " tool_choice asks for " + name + "."
	switch name {
	case ToolReport:
		return e.report(st, strings.TrimSpace(note))
	case ToolSearch, ToolTextSearch:
		qs := []string{st.question, strings.Join(terms(st.question), " ")}
		for _, b := range e.bridges(st, e.rank(st)) {
			qs = append(qs, b.name)
		}
		for _, q := range qs {
			if q != "" && !st.issued[name+"\x00"+normQuery(q)] {
				return []call{{name, searchArgs(q, e.cfg.Limit)}}, strings.TrimSpace(note + " I search for " + quote(q) + ".")
			}
		}
		return []call{{name, searchArgs(st.question, e.cfg.Limit)}}, strings.TrimSpace(note + " Every query was already issued, so I repeat the question.")
	case ToolRead:
		for _, r := range e.rank(st) {
			if !st.read[r.id] {
				return []call{{ToolRead, fmt.Sprintf(`{"id":%q}`, r.id)}}, strings.TrimSpace(note + " I read the best document not yet read.")
			}
		}
		return nil, strings.TrimSpace(note + " There is no document left to read.")
	default:
		b, _ := json.Marshal(map[string]string{"query": st.question})
		return []call{{name, string(b)}}, strings.TrimSpace(note + " The system prompt does not describe it; I pass it the question.")
	}
}

// plan returns the searches and reads of the next reply, or none to report.
func (e *Engine) plan(st *state, req *domain.ChatRequest) ([]call, string) {
	budget := min(e.cfg.MaxCalls-st.calls, e.cfg.MaxParallel)
	if st.turns >= e.cfg.MaxTurns-1 || budget <= 0 {
		return nil, fmt.Sprintf("I have used %d turns and %d tool calls, the budget.", st.turns, st.calls)
	}
	var calls []call
	add := func(tool, q string, limit int) bool {
		q = strings.TrimSpace(q)
		if len(calls) >= budget || q == "" {
			return false
		}
		if tool == ToolTextSearch && !st.tools.textSearch {
			tool = ToolSearch
		}
		if tool == ToolSearch && !st.tools.search {
			tool = ToolTextSearch
		}
		key := tool + "\x00" + normQuery(q)
		if st.issued[key] {
			return false
		}
		st.issued[key] = true
		calls = append(calls, call{tool, searchArgs(q, limit)})
		return true
	}
	if st.turns == 0 {
		var parts []string
		add(ToolSearch, st.question, e.cfg.Limit)
		kw := strings.Join(terms(st.question), " ")
		if normQuery(kw) != normQuery(st.question) {
			add(ToolTextSearch, kw, e.cfg.Limit)
		}
		for _, p := range st.subs {
			if add(ToolSearch, p, e.cfg.Limit) {
				parts = append(parts, quote(p))
			}
		}
		ents := append(quoted(st.question), entities(st.question)...)
		n := 0
		for _, ent := range ents {
			if n >= e.cfg.MaxEntities {
				break
			}
			if add(ToolTextSearch, ent, e.cfg.Limit) {
				parts = append(parts, quote(ent))
				n++
			}
		}
		for _, p := range decompose(st.question) {
			if len(st.subs) > 0 {
				break // the sub-questions are its parts
			}
			if add(ToolSearch, p, e.cfg.Limit) {
				parts = append(parts, quote(p))
			}
		}
		why := "I search for the question as a whole and for its keywords"
		if len(parts) > 0 {
			why += ", and look up its parts and names exactly: " + strings.Join(parts, ", ")
		}
		return calls, why + "."
	}

	ranked := e.rank(st)
	if len(ranked) == 0 {
		// nothing found: try the keywords in the other mode once, then give up
		kw := strings.Join(terms(st.question), " ")
		add(ToolSearch, kw, e.cfg.Limit)
		add(ToolTextSearch, st.question, e.cfg.Limit)
		if len(calls) == 0 {
			return nil, "No search returned any document."
		}
		return calls, "No document was found yet, so I retry with the keywords in the other search mode."
	}
	var why []string
	// read decisive hits whose text was cut short
	if st.tools.read {
		reads := 0
		for _, r := range ranked[:min(3, len(ranked))] {
			d := st.docs[r.id]
			if reads < e.cfg.MaxReads && d.trunc && !d.full && !st.read[r.id] && len(calls) < budget {
				calls = append(calls, call{ToolRead, fmt.Sprintf(`{"id":%q}`, r.id)})
				st.read[r.id] = true
				why = append(why, "read "+r.id+" (a top hit whose text was truncated)")
				reads++
			}
		}
	}
	cov := e.coverage(st, ranked)
	hops := st.turns // the first turn searched the question; each later turn is a hop
	chat := st.chatTurns()
	// the evidence grows: the last hop found documents not seen before, and
	// beyond the second hop, one of them is among the best three (the chain
	// goes on rather than wandering off)
	grew := st.turns < 2 || st.grew() && (st.turns < 3 || st.onChain(ranked))
	if !chat && grew && (hops <= 1 || cov < e.cfg.MinCoverage && hops < e.cfg.MaxTurns-1) {
		var followed, rests []string
		for _, a := range st.aliases {
			if add(ToolTextSearch, a.other(), e.cfg.Limit) {
				why = append(why, "look up "+quote(a.other())+", the other form of "+quote(a.form())+" in the documents")
			}
		}
		for _, b := range e.bridges(st, ranked) {
			if len(followed) >= e.cfg.MaxBridges {
				break
			}
			// the entity with what the question asks that the document
			// naming it does not say: finds the entity's own document
			// rather than any that names it, and carries the chain on
			rest := strings.Join(e.uncovered(st, b.src), " ")
			byName := add(ToolTextSearch, b.name, e.cfg.Limit)
			withRest := rest != "" && add(ToolSearch, b.name+" "+rest, e.cfg.Limit)
			if byName || withRest {
				followed = append(followed, quote(b.name))
				if withRest {
					rests = append(rests, quote(b.name+" "+rest))
				}
			}
		}
		if len(followed) > 0 {
			msg := "follow the bridges the evidence names (names, quoted titles, dates in the slots of the question's relations): " + strings.Join(followed, ", ")
			if len(rests) > 0 {
				msg += "; with the question's terms their documents lack: " + strings.Join(rests, ", ")
			}
			why = append(why, msg)
		}
		if prf := e.feedbackQuery(st, ranked); prf != "" && add(ToolSearch, prf, e.cfg.Limit) {
			why = append(why, "search again with terms from the top documents ("+quote(prf)+")")
		}
	}
	if len(calls) == 0 && chat {
		return nil, "Most documents found are chat turns (\"Name: text\"), so there is no chain to follow; I keep the order of the search for the question."
	}
	if len(calls) == 0 && !grew {
		return nil, "The last hop added nothing to the chain (no new document, or none among the best three): the evidence stopped growing."
	}
	if len(calls) == 0 {
		return nil, fmt.Sprintf("The evidence covers %.0f%% of the question's terms and there is nothing new to search.", cov*100)
	}
	lead := fmt.Sprintf("The top document is %s; the best two cover %.0f%% of the question's terms.", describe(st.docs[ranked[0].id]), cov*100)
	return calls, lead + " Next I " + strings.Join(why, "; ") + "."
}

// decompose splits multi-part questions ("X and Y", "X or Y", "X, Y") into
// parts with at least two content words.
func decompose(q string) []string {
	var out []string
	for _, sep := range []string{" and ", " or ", ", ", "; "} {
		if !strings.Contains(q, sep) {
			continue
		}
		for _, p := range strings.Split(q, sep) {
			if len(terms(p)) >= 2 && len(p) < len(q) {
				out = append(out, strings.TrimSpace(strings.Trim(p, "?.!,;")))
			}
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}

type scored struct {
	id    string
	score float64
	base  float64 // the evidence score, without the order of a chat search
	cov   float64 // the share (by idf) of the question's terms it contains
}

// rank fuses the evidence of every result list. The state's documents do
// not change once read, so the ranking is computed once.
func (e *Engine) rank(st *state) []scored {
	if st.ranked == nil {
		st.ranked = e.fuse(st)
	}
	return st.ranked
}

func (e *Engine) fuse(st *state) []scored {
	if len(st.docs) == 0 {
		return nil
	}
	qt := st.qt
	df := make([]int, len(qt))
	for _, d := range st.docs {
		for i, ok := range st.has(d) {
			if ok {
				df[i]++
			}
		}
	}
	n := float64(len(st.docs))
	idf := make([]float64, len(qt))
	total := 0.0
	for i := range qt {
		idf[i] = math.Log(1 + n/float64(1+df[i]))
		total += idf[i]
	}
	score := map[string]float64{}
	for _, l := range st.lists {
		w := 1.0
		if l.hop > 0 {
			w = 0.8
		}
		// Weighted reciprocal rank with a small k, not rank.RRF's k 60:
		// see internal/rank/fusion.go for why the policy fuses apart.
		for r, h := range l.hits {
			score[h.ID] += w / float64(5+r)
		}
	}
	out := make([]scored, 0, len(st.docs))
	for id, d := range st.docs {
		cov := 0.0
		if total > 0 {
			for i, ok := range st.has(d) {
				if ok {
					cov += idf[i]
				}
			}
			cov /= total
		}
		t := 0.0
		if mentionsKey(st.qlow, d.key) {
			t = e.cfg.TitleWeight
		}
		v := score[id] + e.cfg.CoverageWeight*cov + t
		out = append(out, scored{id, v, v, cov})
	}
	if a := st.anchor(); a >= 0 && st.chat {
		// Chat turns and notes: keep the order of the question's own search
		// (the evidence fusion below is built for titled passages, and on
		// such documents it does worse than that order); the other lists'
		// documents follow all of its hits, so the loop never loses what
		// that one search found.
		for r, h := range st.lists[a].hits {
			for i := range out {
				if out[i].id == h.ID {
					out[i].score += 1e5 + float64(100*(len(st.lists[a].hits)-r))
				}
			}
		}
		// A turn said by someone else when the question names a speaker
		// ("What books has Melanie read?") goes after the named speakers'
		// among the question's own hits, and among the others.
		if named := st.namedSpeakers(); len(named) > 0 {
			for i := range out {
				if sp := st.docs[out[i].id].spk; sp != "" && !named[sp] {
					out[i].score -= 1e4
				}
			}
		}
		sortScored(out, st)
		return out
	}
	sortScored(out, st)
	// link bonus: documents named by (or naming) the top document, and
	// those another arm of the question (a document whose subject the
	// question names, as "film B" in "Are the directors of films A and B
	// from the same country?") names as a name in the slot of one of the
	// question's relations ("directed by …"): each arm's next hop
	if len(out) > 1 {
		top := st.docs[out[0].id]
		arms := []*doc{top}
		for _, r := range out[1:min(e.cfg.ReportLimit, len(out))] {
			if d := st.docs[r.id]; st.arm(d) {
				arms = append(arms, d)
			}
		}
		for i := 1; i < len(out); i++ {
			d := st.docs[out[i].id]
			named := false
			for k, a := range arms {
				if a != d && (k == 0 && mentionsDoc(a.low, d) || k > 0 && st.slotMentionDoc(a, d, true)) {
					named = true
					break
				}
			}
			if named || mentionsKey(d.low, top.key) {
				out[i].score += e.cfg.LinkWeight
				out[i].base += e.cfg.LinkWeight
			}
		}
		sortScored(out, st)
	}
	e.keepFirsts(st, out)
	return out
}

// chatTurns says whether most documents seen are chat turns ("Melanie: I
// went camping"): then the fused ranking leans on the question's own search,
// and the subject, link and bridge evidence, built for documents about
// something, says nothing.
func (st *state) chatTurns() bool { return st.chat }

// grew says whether the last hop's searches found a document not seen
// before: when they did not, the evidence stopped growing.
func (st *state) grew() bool {
	for _, d := range st.docs {
		if d.hop == st.turns-1 {
			return true
		}
	}
	return false
}

// onChain says whether one of the best three documents was first found by
// the last hop.
func (st *state) onChain(ranked []scored) bool {
	for _, r := range ranked[:min(3, len(ranked))] {
		if st.docs[r.id].hop == st.turns-1 {
			return true
		}
	}
	return false
}

// namedSpeakers are the speakers of the documents seen (their "Name:"
// labels) that the question names.
func (st *state) namedSpeakers() map[string]bool {
	named := map[string]bool{}
	for _, d := range st.docs {
		if sp := d.spk; sp != "" && !named[sp] && containsWord(st.question, sp) {
			named[sp] = true
		}
	}
	return named
}

// anchor is the index of the list that searched the question itself (the
// first such list, in search mode where it was issued), or -1.
func (st *state) anchor() int {
	q := normQuery(st.question)
	best := -1
	for i, l := range st.lists {
		if l.hop != 0 || normQuery(l.query) != q {
			continue
		}
		if l.tool == ToolSearch {
			return i
		}
		if best < 0 {
			best = i
		}
	}
	return best
}

func sortScored(out []scored, st *state) {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return st.docs[out[i].id].first < st.docs[out[j].id].first
	})
}

// namesInSlot says whether d names a subject (its subjectKey) in the slot
// of one of the question's relations ("Marta Ruiz keeps the spare unit"
// for "who keeps the spare router"): a document linked that way carries
// the chain on, one merely named beside it does not.
func (st *state) names(d *doc, key string, inSlot bool) bool {
	if !mentionsKey(d.low, key) || !inSlot {
		return mentionsKey(d.low, key)
	}
	return st.namesInSlot(d, key)
}

func (st *state) namesInSlot(d *doc, key string) bool { return st.slotMention(d, key, false) }

// slotMention says whether d names key in the sentence slot of one of the
// question's relations; asName asks that it be written as a name there
// (its first letter upper-case or a digit: "the Lyon office" names no
// subject "Office").
func (st *state) slotMention(d *doc, key string, asName bool) bool {
	if !mentionsKey(d.low, key) {
		return false
	}
	if len(d.low) != len(d.text) { // lower-casing moved the offsets
		return true
	}
	for off := 0; ; {
		i := strings.Index(d.low[off:], key)
		if i < 0 {
			return false
		}
		i += off
		if (!asName || startsName(d.text[i:])) && inSentenceSlot(d.text, i, i+len(key), st.stems) {
			return true
		}
		off = i + len(key)
	}
}

// subjectKey is a subject as mentions look for it: lower-cased, without a
// bracketed disambiguation ("Ed Wood (film)" gives "ed wood"), and "" when
// it is shorter than three characters.
func subjectKey(title string) string {
	title = strings.TrimSpace(title)
	if len(title) < 3 {
		return ""
	}
	if i := strings.Index(title, " ("); i > 0 { // "Ed Wood (film)"
		title = title[:i]
	}
	return strings.ToLower(title)
}

// mentionsKey says whether a lower-cased text names a subject (its
// subjectKey).
func mentionsKey(low, key string) bool {
	return key != "" && low != "" && strings.Contains(low, key)
}

// coverage is the share of the question's terms found in the best two documents.
func (e *Engine) coverage(st *state, ranked []scored) float64 {
	if len(st.qt) == 0 {
		return 1
	}
	have := make([]bool, len(st.qt))
	for _, r := range ranked[:min(2, len(ranked))] {
		for i, ok := range st.has(st.docs[r.id]) {
			have[i] = have[i] || ok
		}
	}
	c := 0
	for _, ok := range have {
		if ok {
			c++
		}
	}
	return float64(c) / float64(len(st.qt))
}

// uncovered returns the question's terms that document id does not contain.
func (e *Engine) uncovered(st *state, id string) []string {
	var out []string
	for i, ok := range st.has(st.docs[id]) {
		if !ok {
			out = append(out, st.qt[i])
		}
	}
	return out
}

// A bridge is a candidate for the next hop: a name, quoted string, date or
// number that a document of the evidence states and the question does not.
type bridge struct {
	name string
	src  string // the document it counts most in
}

// bridges ranks the candidates of the evidence's documents (the top three,
// the other documents of the best ReportLimit whose subject the question
// names (its arms), and after the first hop the two best documents the last
// hop found) by how
// they connect the question to the evidence: the rank of the documents that
// state them, how early they come there, whether they sit in the slot of one
// of the question's relations ("directed by ___" for "the director of"),
// and whether they are specific (a word most documents seen contain, such as
// "American", counts little). Dates and numbers count less than names.
func (e *Engine) bridges(st *state, ranked []scored) []bridge {
	ql := st.qlow
	stems := st.stems
	var srcs []string
	inSrc := map[string]bool{}
	for _, r := range ranked[:min(3, len(ranked))] {
		srcs, inSrc[r.id] = append(srcs, r.id), true
	}
	for _, r := range ranked[:min(e.cfg.ReportLimit, len(ranked))] { // the question's other arms
		if !inSrc[r.id] && st.arm(st.docs[r.id]) {
			srcs, inSrc[r.id] = append(srcs, r.id), true
		}
	}
	if st.turns >= 2 { // the frontier: what the last hop found
		n := 0
		for _, r := range ranked[:min(e.cfg.ReportLimit, len(ranked))] {
			if d := st.docs[r.id]; d.hop == st.turns-1 && !inSrc[r.id] && n < 2 {
				srcs, inSrc[r.id] = append(srcs, r.id), true
				n++
			}
		}
	}
	known := map[string]bool{}
	for _, id := range srcs {
		if sub := strings.ToLower(st.docs[id].subject); sub != "" {
			known[sub] = true
		}
	}
	df := map[string]int{} // documents seen that contain a one-word candidate, for specificity
	type cand struct {
		name  string
		score float64
		first int
		best  float64
		src   string
	}
	cands := map[string]*cand{}
	k := 0
	for rank, id := range srcs {
		d := st.docs[id]
		text := d.text
		if len(text) > 2500 {
			text = text[:2500]
		}
		sub := strings.ToLower(d.subject)
		for pos, c := range candidates(text) {
			le := strings.ToLower(c.text)
			if known[le] || strings.Contains(ql, le) || len(terms(c.text)) == 0 {
				continue
			}
			if sub != "" && (strings.Contains(sub, le) || strings.Contains(le, sub)) {
				continue
			}
			s := 1 / float64(1+rank) / (1 + 0.25*float64(pos))
			switch c.kind {
			case candNumber:
				s *= 0.3
			}
			if inSlot(text, c.start, c.end, stems) {
				s *= 2
			}
			if !strings.Contains(c.text, " ") && len(st.docs) >= 8 {
				n, ok := df[le]
				if !ok {
					for _, od := range st.docs {
						if containsWord(od.low, le) {
							n++
						}
					}
					df[le] = n
				}
				if 4*n > len(st.docs) {
					s *= 0.3
				}
			}
			x, ok := cands[le]
			if !ok {
				x = &cand{name: c.text, first: k}
				k++
				cands[le] = x
			}
			x.score += s
			if s > x.best {
				x.best, x.src = s, id
			}
		}
	}
	list := make([]*cand, 0, len(cands))
	for _, c := range cands {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].score != list[j].score {
			return list[i].score > list[j].score
		}
		return list[i].first < list[j].first
	})
	out := make([]bridge, 0, len(list))
	for _, c := range list {
		out = append(out, bridge{c.name, c.src})
	}
	return out
}

// feedbackQuery is the question's keywords plus the most frequent new terms
// of the top two documents (pseudo-relevance feedback).
func (e *Engine) feedbackQuery(st *state, ranked []scored) string {
	qt := slices.Clip(st.qt) // appended to below
	inQ := map[string]bool{}
	for _, t := range qt {
		inQ[t] = true
	}
	tf := map[string]int{}
	var order []string
	for _, r := range ranked[:min(2, len(ranked))] {
		d := st.docs[r.id]
		for _, t := range terms(d.title + " " + d.text) {
			if inQ[t] || isDigits(t) || len(t) < 3 {
				continue
			}
			if tf[t] == 0 {
				order = append(order, t)
			}
			tf[t]++
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return tf[order[i]] > tf[order[j]] })
	extra := order[:min(4, len(order))]
	if len(extra) == 0 {
		return ""
	}
	return strings.Join(append(qt, extra...), " ")
}

// reportIDs are the ids to report: the documents of the ranking that carry
// the evidence, in rank order. Of the best ReportLimit, a document is
// reported when its evidence score is at least ReportCut times the best
// document's, or at least ReportLinkCut times it and the document is linked
// to the chain (the question or the top document names its subject, or it
// names the top document's subject); the first MinReport always are. Then
// the report is sized to the chains the evidence resolved (chain): each
// reported arm of the question brings the document of each hop it
// resolved, whatever its score. Chat turns are not cut.
func (e *Engine) reportIDs(st *state, ranked []scored) []string {
	n := min(e.cfg.ReportLimit, len(ranked))
	if e.cfg.ReportCut <= 0 || n == 0 || st.chat {
		return topIDs(ranked, n)
	}
	top := 0.0
	for _, r := range ranked[:n] {
		top = max(top, r.base)
	}
	first := st.docs[ranked[0].id]
	keep := make([]bool, n)
	for i, r := range ranked[:n] {
		d := st.docs[r.id]
		// a document that shares none of the question's terms is on the
		// chain only when the link sits in the slot of one of its relations
		inSlot := r.cov == 0
		linked := mentionsKey(st.qlow, d.key) || i > 0 && (st.namesDoc(first, d, inSlot) || st.names(d, first.key, inSlot))
		keep[i] = i < e.cfg.MinReport || r.base >= e.cfg.ReportCut*top || linked && r.base >= e.cfg.ReportLinkCut*top
	}
	st.chain(ranked[:n], keep)
	e.keepSubs(st, ranked[:n], keep)
	e.keepAnchored(st, ranked[:n], keep)
	out := make([]string, 0, n)
	for i, r := range ranked[:n] {
		if keep[i] {
			out = append(out, r.id)
		}
	}
	return out
}

// chain adds to keep the documents of the chains the evidence resolved:
// from the top document and each other reported document whose subject the
// question names (an arm of the question, see arm), the best-ranked
// document it names as a name in the slot of one of the question's
// relations, within the same sentence ("directed by Tim Burton" for "the
// director of"; "managed by Ingrid Berg" for "the managers of"), and from
// that one the next, for as many hops as the loop made (at least one). The
// report's size thus follows the chain rather than a fixed share of the
// best score: a question comparing two chains ("Are the directors of films
// A and B from the same country?") reports the four documents of its two
// arms and their hops, a plain bridge question its two. The rule reads only
// the documents' text, so it holds for notes and untitled chunks (their
// subject is the name their text starts with, see leadEntity).
func (st *state) chain(ranked []scored, keep []bool) {
	depth := max(1, st.turns-1)
	for s := range ranked {
		if !keep[s] || s > 0 && !st.arm(st.docs[ranked[s].id]) {
			continue
		}
		cur := st.docs[ranked[s].id]
		for range depth {
			next := -1
			for j, r := range ranked {
				d := st.docs[r.id]
				if j != s && d != cur && d.key != "" && d.key != cur.key && !st.arm(d) && st.slotMentionDoc(cur, d, true) {
					next = j
					break
				}
			}
			if next < 0 {
				break
			}
			keep[next] = true
			cur = st.docs[ranked[next].id]
		}
	}
}

func topIDs(ranked []scored, n int) []string {
	out := make([]string, 0, min(n, len(ranked)))
	for _, r := range ranked[:min(n, len(ranked))] {
		out = append(out, r.id)
	}
	return out
}

func uniq(ts []string) []string {
	seen := map[string]bool{}
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func quote(s string) string { return `"` + s + `"` }

// unmappedNote says which roles no tool of the client plays.
func unmappedNote(unmapped []string) string {
	what := map[string]string{ToolSearch: "semantic search", ToolTextSearch: "exact keyword search", ToolRead: "reading a document's full text", ToolReport: "reporting the helpful ids"}
	var parts []string
	for _, r := range unmapped {
		parts = append(parts, what[r]+" ("+r+")")
	}
	return "None of the tools offered plays the role of " + strings.Join(parts, ", ") + ", so I go without it and use the tools I can."
}

func describe(d *doc) string {
	if d.subject != "" {
		return d.id + " (" + d.subject + ")"
	}
	return d.id
}

// arm says whether the question names d's subject, written as a name
// ("Oslo" in "the managers of the Oslo office and the Lyon office"): a
// chain of the question starts at d. A subject the question merely
// contains as a word ("office") does not make one.
func (st *state) arm(d *doc) bool {
	if !mentionsKey(st.qlow, d.key) {
		return false
	}
	if len(st.qlow) != len(st.question) { // lower-casing moved the offsets
		return true
	}
	for off := 0; ; {
		i := strings.Index(st.qlow[off:], d.key)
		if i < 0 {
			return false
		}
		i += off
		if startsName(st.question[i:]) {
			return true
		}
		off = i + len(d.key)
	}
}

// startsName says whether s starts as a name does: an upper-case letter or
// a digit.
func startsName(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

// shortForms are the shorter forms a text may use for a subject read from
// a document's own lead: for three or more words, its first or second word
// with its last ("Vernon Campbell Sewell" is named "Vernon Sewell", "Sir
// Peter Robert Jackson" "Peter Jackson"); for a name of two to four words
// (letters only), the familiar form of a given name with the last word:
// the given name's first three to five letters or, of six letters or
// more, its last four ("Samuel Timothy McGraw" is named "Tim McGraw",
// "Andrew Fortier" "Drew Fortier"; never a stop word: "and Fortier").
func shortForms(key string) []string {
	ws := strings.Fields(key)
	if len(ws) < 2 {
		return nil
	}
	last := ws[len(ws)-1]
	var out []string
	if len(ws) >= 3 {
		for _, w := range ws[:2] {
			if len(w) > 2 {
				out = append(out, w+" "+last)
			}
		}
	}
	if !personName(ws) {
		return out
	}
	for _, w := range ws[:min(2, len(ws)-1)] {
		r := []rune(w)
		var forms []string
		for n := 3; n <= 5 && n < len(r); n++ {
			forms = append(forms, string(r[:n]))
		}
		if len(r) >= 6 {
			forms = append(forms, string(r[len(r)-4:]))
		}
		for _, f := range forms {
			if !stopwords[f] { // "and fortier" is not Andrew Fortier: "Lee and Fortier"
				out = append(out, f+" "+last)
			}
		}
	}
	return uniq(out)
}

// personName says whether a subject's words can be a person's name: two to
// four words of letters, none of them a connector ("of", "the", "and"),
// the last of three letters or more.
func personName(ws []string) bool {
	if len(ws) < 2 || len(ws) > 4 || len([]rune(ws[len(ws)-1])) < 3 {
		return false
	}
	for _, w := range ws {
		if connectors[w] {
			return false
		}
		for _, r := range w {
			if !unicode.IsLetter(r) && r != '-' && r != '\'' {
				return false
			}
		}
	}
	return true
}

// mentionsDoc says whether a lower-cased text names d's subject, in full or
// in one of its shorter forms.
func mentionsDoc(low string, d *doc) bool {
	if mentionsKey(low, d.key) {
		return true
	}
	for _, k := range d.alt {
		if mentionsKey(low, k) {
			return true
		}
	}
	return false
}

// namesDoc is names for d's subject and its shorter forms.
func (st *state) namesDoc(x, d *doc, inSlot bool) bool {
	if st.names(x, d.key, inSlot) {
		return true
	}
	for _, k := range d.alt {
		if st.names(x, k, inSlot) {
			return true
		}
	}
	return false
}

// slotMentionDoc is slotMention for d's subject and its shorter forms.
func (st *state) slotMentionDoc(x, d *doc, asName bool) bool {
	if st.slotMention(x, d.key, asName) {
		return true
	}
	for _, k := range d.alt {
		if st.slotMention(x, k, asName) {
			return true
		}
	}
	return false
}

// keepAnchored adds to keep, for a parallel question, the documents the
// ranking's best ReportLimit always hold (firsts: the top of the question's
// own search when it has several clauses, and each sub-question's first
// hit): the report of a question that joins several facts is never short of
// what one search for it found at its top.
func (e *Engine) keepAnchored(st *state, ranked []scored, keep []bool) {
	if len(st.subs) == 0 {
		return
	}
	fs := e.firsts(st)
	for i, r := range ranked {
		if slices.Contains(fs, r.id) {
			keep[i] = true
		}
	}
}

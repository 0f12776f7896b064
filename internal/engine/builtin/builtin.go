package builtin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"capsuled/internal/domain"
	"capsuled/internal/toolresult"
)

// Tool names of the protocol.
const (
	ToolSearch     = "search"
	ToolTextSearch = "text_search"
	ToolRead       = "read"
	ToolReport     = "report_helpful_ids"
)

// Config sets the policy's budgets. Zero fields take the defaults.
type Config struct {
	MaxTurns    int     // tool-calling replies before it must report; default 6 (the question's search and four hops)
	MaxCalls    int     // tool calls over the whole conversation; default 40
	MaxParallel int     // tool calls in one reply; default 8
	Limit       int     // limit of each search; default 10
	ReportLimit int     // ids in report_helpful_ids; default 10
	MaxReads    int     // read calls per reply; default 2
	MaxBridges  int     // bridge entities followed per hop; default 4
	MaxEntities int     // entities of the question sent to text_search; default 3
	MinCoverage float64 // coverage of the question's terms that ends the hops; default 0.999
	// ReportCut is the share of the best document's evidence score a
	// document needs to be reported, and ReportLinkCut the share a document
	// linked to the chain needs (see the package doc); a negative ReportCut
	// turns the cut off: the report lists up to ReportLimit. Defaults 0.5
	// and 0.25.
	ReportCut, ReportLinkCut float64
	MinReport                int // ids reported at least, when there are that many; default 2
	// Weights of the fused evidence: term coverage of the question, a link
	// to or from the top document, and the question naming the title.
	CoverageWeight, LinkWeight, TitleWeight float64
	// For a parallel question (one with sub-questions: its clauses, or the
	// names of a conjunction, see subQuestions), SubKeep is how many of each
	// sub-question's first hits the best ReportLimit of the ranking always
	// hold, and AnchorKeep how many of the question's own search's when the
	// question has several clauses; defaults 1 and 7. A negative value keeps
	// none.
	AnchorKeep, SubKeep int
}

// WithDefaults returns c with zero fields set.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxTurns, 6)
	def(&c.MaxCalls, 40)
	def(&c.MaxParallel, 8)
	def(&c.Limit, 10)
	def(&c.ReportLimit, 10)
	def(&c.MaxReads, 2)
	def(&c.MaxBridges, 4)
	def(&c.MaxEntities, 3)
	def(&c.MinReport, 2)
	if c.AnchorKeep == 0 {
		c.AnchorKeep = 7
	}
	if c.SubKeep == 0 {
		c.SubKeep = 1
	}
	defF := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	defF(&c.MinCoverage, 0.999)
	if c.ReportCut == 0 {
		c.ReportCut = 0.5
	}
	defF(&c.ReportLinkCut, 0.25)
	defF(&c.CoverageWeight, 0.5)
	defF(&c.LinkWeight, 0.3)
	defF(&c.TitleWeight, 0.4)
	return c
}

// Engine is the built-in policy. Its reply depends on the request alone; it
// remembers what it derives from the messages' text across requests (a
// bounded memo: the same work is not done again on each turn of a
// conversation), and is safe for concurrent use.
type Engine struct {
	cfg  Config
	memo *memo
}

// New returns the engine.
func New(cfg Config) *Engine { return &Engine{cfg: cfg.WithDefaults(), memo: newMemo()} }

// Name is "builtin".
func (e *Engine) Name() string { return "builtin" }

// unsupported are the pass-through parameters a deterministic policy without
// a tokenizer-level decoder cannot honour, each with the values it refuses.
// Other pass-through parameters (sampling settings) do not change its reply.
var unsupported = []struct {
	param string
	bad   func(v any) bool
}{
	{"logprobs", isTrue},
	{"top_logprobs", func(v any) bool { n, ok := v.(json.Number); return ok && n != "0" }},
	{"prompt_logprobs", always},
	{"logit_bias", func(v any) bool { m, ok := v.(map[string]any); return !ok || len(m) > 0 }},
	{"structured_outputs", always},
	{"response_format", func(v any) bool { m, _ := v.(map[string]any); return m["type"] != "text" }},
	{"use_beam_search", isTrue},
	{"chat_template", always},
	{"return_tokens_as_token_ids", isTrue},
	{"return_token_ids", isTrue},
}

func isTrue(v any) bool { return v == true }
func always(any) bool   { return true }

// Check refuses the parameters a deterministic policy without a tokenizer-level
// decoder cannot honour.
func (e *Engine) Check(req *domain.ChatRequest) error {
	for _, r := range unsupported {
		v, sent := req.Passthrough[r.param]
		if sent && v != nil && r.bad(v) {
			return &domain.Error{Kind: domain.KindInvalid, Code: "unsupported_parameter", Param: r.param,
				Message: fmt.Sprintf("the builtin engine of svc-1 cannot honour %s; remove it, or serve svc-1 with an upstream engine (--engine upstream)", r.param)}
		}
	}
	return nil
}

// Generate returns the next reply.
func (e *Engine) Generate(ctx context.Context, req *domain.ChatRequest) ([]domain.Choice, *domain.Usage, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return e.generate(req, toolDefs(req)), nil, nil
}

// generate decides the reply with the tools defs define (none: the tools
// the system prompt describes).
func (e *Engine) generate(req *domain.ChatRequest, defs []ToolDef) []domain.Choice {
	st := readStateMemo(req.Messages, defs, e.memo)
	return []domain.Choice{e.decide(st, req)}
}

// toolPatterns find the documented names in a system prompt.
var toolPatterns = map[string]*regexp.Regexp{
	ToolSearch:     regexp.MustCompile("(?i)(^|[^a-z_])[`\"'*]?search[`\"'*]?\\s*(\\(|:|tool|function|-|–|—)|[`\"']search[`\"']"),
	ToolTextSearch: regexp.MustCompile(`(?i)\btext_search\b`),
	ToolRead:       regexp.MustCompile("(?i)(^|[^a-z_])[`\"'*]?read[`\"'*]?\\s*(\\(|:|tool|function|-|–|—)|[`\"']read[`\"']"),
	ToolReport:     regexp.MustCompile(`(?i)\breport_helpful_ids\b`),
}

// A resultList is one search result as the client returned it.
type resultList struct {
	tool  string
	query string
	hop   int // 0: the question and its parts; 1+: bridge and feedback queries
	hits  []toolresult.Hit
}

// doc is what the conversation showed of one document.
type doc struct {
	id      string
	title   string // given by the backend, or read from the text's lead
	subject string // the title, or else the name the text starts with
	text    string
	full    bool // its text came from read
	trunc   bool
	other   []string // the other passages of it the searches showed, in order (at most maxOther)
	first   int      // order of first sight
	hop     int      // hop of the first result list that showed it
	// derived once the conversation is read (see state.finish)
	low  string   // the text lower-cased
	key  string   // the subject as mentions look for it (subjectKey)
	alt  []string // shorter forms of a subject read from the text ("vernon sewell" for "Vernon Campbell Sewell")
	spk  string   // the speaker of a chat turn, or ""
	qhas []bool   // which of the question's terms (state.qt) its title or text contains; nil until asked (state.has)
}

// state is what the messages say happened.
type state struct {
	tools    toolset
	question string
	issued   map[string]bool // tool + "\x00" + normalised query
	read     map[string]bool
	calls    int
	turns    int // tool-calling assistant replies since the question
	reported bool
	lists    []resultList
	docs     map[string]*doc
	order    []string
	hopQuery map[string]int // normalised query -> hop of the call
	// derived once the conversation is read (see state.finish)
	qt      []string        // the question's terms, each once
	qidx    map[string]int  // term -> index in qt
	qlow    string          // the question lower-cased
	chat    bool            // most documents are chat turns
	stems   map[string]bool // the question's relation stems (relationStems)
	subs    []string        // the question's sub-questions (subQuestions)
	clauses int             // the number of the question's clauses (splitClauses)
	ranked  []scored        // the fused ranking, once computed (Engine.rank)
	memo    *memo           // what is derived from text, remembered across requests (nil: nothing)
	aliases []alias         // the question's names and short forms linked to the other form in the documents (findAliases)
}

func readState(msgs []domain.Message, defs []ToolDef) *state { return readStateMemo(msgs, defs, nil) }

// addOther keeps t among the document's other passages: once, and while
// they are fewer than maxOther (a passage the searches showed again takes
// no second place).
func (d *doc) addOther(t string) {
	if t != "" && t != d.text && len(d.other) < maxOther && !slices.Contains(d.other, t) {
		d.other = append(d.other, t)
	}
}

// maxOther is how many passages of a document besides its longest the
// state keeps, to read a subject from.
const maxOther = 4

// readStateMemo is readState with what it derives from text remembered in
// mem (nil: nothing remembered).
func readStateMemo(msgs []domain.Message, defs []ToolDef, mem *memo) *state {
	st := &state{issued: map[string]bool{}, read: map[string]bool{}, docs: map[string]*doc{}, hopQuery: map[string]int{}, memo: mem}
	var prompt strings.Builder
	qi := -1
	for i, m := range msgs {
		switch m.Role {
		case domain.RoleSystem, domain.RoleDeveloper:
			prompt.WriteString(m.Text())
			prompt.WriteByte('\n')
		case domain.RoleUser:
			if t := strings.TrimSpace(m.Text()); t != "" {
				st.question, qi = t, i
			}
		}
	}
	st.tools = mem.toolsFor(prompt.String(), defs)
	type pending struct {
		name, query string
		hop         int
		readID      string
	}
	calls := map[string]pending{}
	for _, m := range msgs[qi+1:] {
		switch m.Role {
		case domain.RoleAssistant:
			if len(m.ToolCalls) == 0 {
				continue
			}
			st.turns++
			for _, tc := range m.ToolCalls {
				st.calls++
				role, q, id := st.tools.parseCall(tc.Name, tc.Arguments)
				p := pending{name: role, hop: st.turns - 1}
				switch role {
				case ToolSearch, ToolTextSearch:
					if q != "" {
						p.query = q
						st.issued[role+"\x00"+normQuery(q)] = true
					}
				case ToolRead:
					if id != "" {
						p.readID = id
						st.read[id] = true
					}
				case ToolReport:
					st.reported = true
				}
				calls[tc.ID] = p
			}
		case domain.RoleTool:
			p, ok := calls[m.ToolCallID]
			if !ok {
				continue
			}
			content := m.Text()
			if p.readID != "" {
				d := st.doc(p.readID)
				if t := strings.TrimSpace(content); t != "" {
					if hits := mem.parse(t); len(hits) == 1 && hits[0].ID == p.readID && hits[0].Text != "" {
						t = hits[0].Text
						if hits[0].Title != "" && d.title == "" {
							d.title = hits[0].Title
						}
					}
					d.text, d.full, d.trunc = t, true, false
				}
				continue
			}
			if p.name != ToolSearch && p.name != ToolTextSearch {
				continue
			}
			hits := mem.parse(content)
			st.lists = append(st.lists, resultList{tool: p.name, query: p.query, hop: p.hop, hits: hits})
			for _, h := range hits {
				if _, seen := st.docs[h.ID]; !seen {
					st.doc(h.ID).hop = p.hop
				}
				d := st.doc(h.ID)
				if d.title == "" {
					d.title = h.Title
				}
				if !d.full && len(h.Text) > len(d.text) {
					shorter := d.text
					d.text, d.trunc = h.Text, h.Truncated
					d.addOther(shorter)
				} else if !d.full {
					d.addOther(h.Text)
				}
			}
		}
	}
	st.finish()
	return st
}

// finish derives what the policy asks of the documents and the question
// more than once: subjects, lower-cased texts, speakers and the question's
// terms. The documents do not change after this.
func (st *state) finish() {
	st.qt = uniq(terms(st.question))
	st.qidx = make(map[string]int, len(st.qt))
	for i, t := range st.qt {
		st.qidx[t] = i
	}
	st.qlow = strings.ToLower(st.question)
	st.stems = relationStems(st.question)
	st.subs = subQuestions(st.question)
	st.clauses = len(splitClauses(st.question))
	turns := 0
	for _, d := range st.docs {
		f := st.memo.features(d.text)
		if d.title == "" {
			d.title = f.lead
		}
		d.subject = d.title
		nick := ""
		if d.subject == "" {
			d.subject, nick = f.entity, f.nick
		}
		// A long document's longest passage need not be its start: its
		// subject then comes from the first other passage that names one
		// ("After the screening, …" is a passage of "Franz Antel( 28 June
		// 1913 – 11 August 2007) was a veteran Austrian filmmaker").
		for _, t := range d.other {
			if d.subject != "" {
				break
			}
			of := st.memo.features(t)
			d.subject = cmp.Or(of.lead, of.entity)
			if of.lead == "" {
				nick = of.nick
			}
		}
		d.low = f.low
		d.key = subjectKey(d.subject)
		if d.title == "" {
			// "Samuel Timothy "Tim" McGraw" is named "Tim McGraw"
			d.alt = shortForms(d.key)
			if k := subjectKey(nick); k != "" {
				d.alt = append(d.alt, k)
			}
		}
		if d.spk = f.spk; d.spk != "" {
			turns++
		}
	}
	st.chat = 2*turns > len(st.docs)
	if !st.chat {
		st.aliases = st.findAliases()
	}
}

// has says which of the question's terms (st.qt) d's title or text
// contains: terms(d.title + " " + d.text) intersected with them, computed
// once per document.
func (st *state) has(d *doc) []bool {
	if d.qhas == nil {
		d.qhas = st.memo.hasTerms(st.qt, st.aliases, d.title, d.text, func() []bool {
			has := make([]bool, len(st.qt))
			eachWord(d.title, func(w string) {
				if i, ok := st.qidx[strings.ToLower(w)]; ok {
					has[i] = true
				}
			})
			// the words of the lower-cased text are the text's words
			// lower-cased: lower-casing keeps a letter a letter
			eachWord(d.low, func(w string) {
				if i, ok := st.qidx[w]; ok {
					has[i] = true
				}
			})
			st.markAliases(d, has)
			return has
		})
	}
	return d.qhas
}

func (st *state) doc(id string) *doc {
	d, ok := st.docs[id]
	if !ok {
		d = &doc{id: id, first: len(st.order)}
		st.docs[id] = d
		st.order = append(st.order, id)
	}
	return d
}

// callID is deterministic: the same conversation gives the same ids.
func callID(turn, i int, name, args string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%d\x00%s\x00%s", turn, i, name, args)))
	return "call_" + hex.EncodeToString(h[:6])
}

func searchArgs(q string, limit int) string {
	b, _ := json.Marshal(struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}{q, limit})
	return string(b)
}

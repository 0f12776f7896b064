package builtin

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"capsuled/internal/domain"
	"capsuled/internal/toolcall"
)

// The engine plays four roles: search (semantic), text_search (exact
// keywords), read (a document's text) and report_helpful_ids. The client
// names the tools that play them: the documented names in its system prompt,
// other names that its system prompt describes ("- grep_corpus: exact
// pattern search …"), or full definitions in the request's tools (name,
// description, JSON-schema parameters). A toolset maps each role to the
// client's tool and the names of its arguments.

var roles = [4]string{ToolSearch, ToolTextSearch, ToolRead, ToolReport}

// A ToolDef is a tool the client defines: its name, what it does and the
// names of its parameters (from the JSON schema's properties) with their
// types ("string", "integer", "array").
type ToolDef struct {
	Name, Description string
	Params            []ToolParam
}

// A ToolParam is one parameter of a ToolDef.
type ToolParam struct {
	Name, Type string
	Required   bool
}

// A roleTool is the client's tool for one role.
type roleTool struct {
	name string
	// argument names: query and limit (search roles), id (read), ids
	// (report); limit is "" when the tool takes none
	query, limit, id, ids string
}

// A toolset says which client tool plays each role.
type toolset struct {
	search, textSearch, read, report bool
	tool                             map[string]roleTool // role -> the client's tool
	role                             map[string]string   // the client's tool name -> role
	unmapped                         []string            // roles no tool plays, when the client named its own tools
	renamed                          bool                // some role has a name other than the documented one
}

func (ts *toolset) set(role string, rt roleTool) {
	if ts.tool == nil {
		ts.tool, ts.role = map[string]roleTool{}, map[string]string{}
	}
	ts.tool[role] = rt
	ts.role[rt.name] = role
	if rt.name != role {
		ts.renamed = true
	}
	switch role {
	case ToolSearch:
		ts.search = true
	case ToolTextSearch:
		ts.textSearch = true
	case ToolRead:
		ts.read = true
	case ToolReport:
		ts.report = true
	}
}

// documented is a role's tool under its documented name and arguments.
func documented(role string) roleTool {
	switch role {
	case ToolRead:
		return roleTool{name: role, id: "id"}
	case ToolReport:
		return roleTool{name: role, ids: "ids"}
	}
	return roleTool{name: role, query: "query", limit: "limit"}
}

// roleWords are the words of a tool's name and description that say which
// role it plays: strong words say it in the name or the description, weak
// ones (words any retrieval tool may use) only in the name.
var roleWords = map[string]struct{ strong, weak []string }{
	ToolReport:     {[]string{"report", "submit", "helpful", "final", "finish", "done", "conclude", "verdict", "hand back", "best first", "most helpful first", "at the end", "when you are done"}, []string{"answer", "return", "give", "hand"}},
	ToolRead:       {[]string{"read", "fetch", "open", "view", "load", "full text", "whole", "entire"}, []string{"get", "show"}},
	ToolTextSearch: {[]string{"grep", "keyword", "keywords", "exact", "exactly", "regex", "regular expression", "pattern", "lexical", "literal", "phrase", "bm25", "substring"}, []string{"match"}},
	ToolSearch:     {[]string{"semantic", "semantically", "meaning", "similar", "similarity", "vector", "dense", "embedding", "hybrid", "natural language", "natural-language"}, []string{"search", "find", "lookup", "look", "query", "retrieve", "retrieval"}},
}

// roleScores scores how well a tool's name and description fit each role:
// a strong word counts three in the name and two in the description, a weak
// one counts one in the name.
func roleScores(name, desc string) map[string]int {
	n := strings.ToLower(strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(camelSplit(name)))
	d := strings.ToLower(desc)
	out := map[string]int{}
	for role, ws := range roleWords {
		for _, w := range ws.strong {
			if containsWord(n, w) {
				out[role] += 3
			}
			if containsWord(d, w) {
				out[role] += 2
			}
		}
		for _, w := range ws.weak {
			if containsWord(n, w) {
				out[role]++
			}
		}
	}
	// "text search" names the keyword role, not the semantic one
	if strings.Contains(n, "text search") || strings.Contains(n, "full text search") {
		out[ToolTextSearch] += 3
	}
	return out
}

// camelSplit puts a space before each inner upper-case letter ("searchDocs"
// gives "search Docs").
func camelSplit(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// assign maps roles to tools: each role to the tool that fits it best, each
// tool to one role, strongest fits first; documented names map directly.
func assign(defs []ToolDef) toolset {
	var ts toolset
	used := map[string]bool{}
	for _, d := range defs {
		for _, role := range roles {
			if d.Name == role && !used[d.Name] {
				ts.set(role, argsFor(role, d))
				used[d.Name] = true
			}
		}
	}
	type fit struct {
		role string
		def  int
		s    int
	}
	var fits []fit
	for i, d := range defs {
		if used[d.Name] {
			continue
		}
		for role, s := range roleScores(d.Name, d.Description) {
			if s > 0 {
				fits = append(fits, fit{role, i, s})
			}
		}
	}
	order := map[string]int{ToolReport: 0, ToolRead: 1, ToolTextSearch: 2, ToolSearch: 3}
	sort.SliceStable(fits, func(i, j int) bool {
		if fits[i].s != fits[j].s {
			return fits[i].s > fits[j].s
		}
		if fits[i].def != fits[j].def {
			return fits[i].def < fits[j].def
		}
		return order[fits[i].role] < order[fits[j].role]
	})
	for _, f := range fits {
		d := defs[f.def]
		if used[d.Name] || ts.tool[f.role].name != "" {
			continue
		}
		ts.set(f.role, argsFor(f.role, d))
		used[d.Name] = true
	}
	for _, role := range roles {
		if ts.tool[role].name == "" {
			ts.unmapped = append(ts.unmapped, role)
		}
	}
	return ts
}

// argsFor picks the arguments of a role's tool from its parameters; with no
// parameters known, the documented names.
func argsFor(role string, d ToolDef) roleTool {
	rt := documented(role)
	rt.name = d.Name
	if len(d.Params) == 0 {
		return rt
	}
	pick := func(typ string, prefer []string) string {
		for _, p := range prefer {
			for _, q := range d.Params {
				if strings.EqualFold(q.Name, p) && (typ == "" || q.Type == "" || q.Type == typ) {
					return q.Name
				}
			}
		}
		for _, q := range d.Params { // the first required one of the type
			if q.Required && (q.Type == typ || typ == "string" && q.Type == "") {
				return q.Name
			}
		}
		for _, q := range d.Params {
			if q.Type == typ {
				return q.Name
			}
		}
		return ""
	}
	switch role {
	case ToolSearch, ToolTextSearch:
		rt.query = pick("string", []string{"query", "q", "pattern", "regex", "keywords", "terms", "text", "search", "question", "phrase"})
		rt.limit = pick("integer", []string{"limit", "k", "top_k", "topk", "max_results", "num_results", "n", "count", "max_hits", "size"})
		for _, q := range d.Params { // max_docs, num_hits, top_n
			if l := strings.ToLower(q.Name); rt.limit == "" && q.Type != "string" && q.Type != "array" &&
				(strings.HasPrefix(l, "max") || strings.HasPrefix(l, "num") || strings.HasPrefix(l, "top")) {
				rt.limit = q.Name
			}
		}
		if rt.query == "" {
			rt.query = "query"
		}
	case ToolRead:
		if rt.id = pick("string", []string{"id", "doc_id", "document_id", "docid", "item_id", "uri", "path", "name"}); rt.id == "" {
			rt.id = "id"
		}
	case ToolReport:
		if rt.ids = pick("array", []string{"ids", "doc_ids", "document_ids", "helpful_ids", "item_ids", "documents", "results"}); rt.ids == "" {
			rt.ids = "ids"
		}
	}
	return rt
}

// promptTool finds tools a system prompt describes one to a line: an
// optional bullet, the name (in backticks or bold, perhaps with its
// arguments in brackets), a colon or dash, and what it does.
var promptTool = regexp.MustCompile("(?m)^[ \\t]*(?:[-*•]|\\d+[.)])?[ \\t]*[`*\"']*([A-Za-z][A-Za-z0-9_.-]{1,63})[`*\"']*[ \\t]*(\\([^)\\n]*\\))?[`*\"']*[ \\t]*(?::|-|–|—)[ \\t]*(.+)$")

// promptArgs finds argument names in a description: "key": or key: inside
// braces, or the names in the brackets after the tool's name.
var promptArgs = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*(\[|"?[a-z]+)`)

// notTools are line heads that introduce or explain rather than name a tool.
var notTools = map[string]bool{"tools": true, "tool": true, "note": true, "notes": true, "arguments": true, "args": true,
	"example": true, "rules": true, "returns": true, "output": true, "input": true, "you": true, "important": true, "step": true}

// toolsFrom reads the tools a system prompt describes. The documented four
// are found by name anywhere; other names by the lines that describe them.
// A prompt that names none gets the documented four.
func toolsFrom(prompt string) toolset {
	var defs []ToolDef
	seen := map[string]bool{}
	for _, m := range promptTool.FindAllStringSubmatch(prompt, -1) {
		name, brackets, desc := m[1], m[2], m[3]
		if notTools[strings.ToLower(name)] || seen[name] || !toolLike(name, brackets) {
			continue
		}
		seen[name] = true
		d := ToolDef{Name: name, Description: desc}
		for _, a := range promptArgs.FindAllStringSubmatch(desc, -1) {
			typ := "string"
			switch {
			case a[2] == "[" || strings.Contains(a[2], "array") || strings.Contains(a[2], "list"):
				typ = "array"
			case strings.Contains(a[2], "int") || strings.Contains(a[2], "number"):
				typ = "integer"
			}
			d.Params = append(d.Params, ToolParam{Name: a[1], Type: typ})
		}
		if brackets != "" && len(d.Params) == 0 {
			for _, a := range strings.Split(strings.Trim(brackets, "()"), ",") {
				if f := strings.Fields(strings.Trim(a, " `\"'")); len(f) > 0 {
					n := strings.TrimRight(strings.Split(f[0], ":")[0], "?=")
					typ := "" // unknown: the names decide
					if la := strings.ToLower(a); strings.Contains(la, "int") {
						typ = "integer"
					} else if strings.Contains(la, "[") || strings.Contains(la, "list") || strings.HasSuffix(n, "ids") {
						typ = "array"
					}
					d.Params = append(d.Params, ToolParam{Name: n, Type: typ, Required: true})
				}
			}
		}
		defs = append(defs, d)
	}
	var ts toolset
	byName := map[string]bool{}
	for _, role := range roles {
		if toolPatterns[role].MatchString(prompt) {
			byName[role] = true
		}
	}
	var described []ToolDef
	for _, d := range defs {
		if byName[d.Name] || roleFit(d) {
			described = append(described, d)
		}
	}
	if len(described) == 0 && len(byName) == 0 {
		for _, role := range roles {
			ts.set(role, documented(role))
		}
		return ts // no protocol prompt: assume the documented four
	}
	ts = assign(described)
	ts.unmapped = nil
	for _, role := range roles {
		if _, ok := ts.tool[role]; !ok && byName[role] {
			ts.set(role, documented(role)) // named in prose rather than on a line of its own
		}
		if _, ok := ts.tool[role]; !ok {
			ts.unmapped = append(ts.unmapped, role)
		}
	}
	if !ts.search && !ts.textSearch {
		ts.set(ToolSearch, documented(ToolSearch))
	}
	if !ts.renamed {
		ts.unmapped = nil // the documented names: a role left out is the client's choice
	}
	return ts
}

// toolLike says whether a line head looks like a tool's name rather than a
// word of prose: snake_case, camelCase, dotted, with brackets after it, or
// one of the documented names.
func toolLike(name, brackets string) bool {
	if brackets != "" || strings.ContainsAny(name, "_.") {
		return true
	}
	for _, r := range roles {
		if name == r {
			return true
		}
	}
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			return true // camelCase
		}
	}
	return name == strings.ToLower(name) && len(name) >= 4
}

// roleFit says whether a described tool fits any role.
func roleFit(d ToolDef) bool {
	for _, s := range roleScores(d.Name, d.Description) {
		if s > 0 {
			return true
		}
	}
	return false
}

// toolsFor maps the roles to the client's tools: to the tools the request
// defines in full when it does (the system prompt then only adds a
// documented name it uses that no definition plays), else to the tools the
// system prompt describes.
func toolsFor(prompt string, defs []ToolDef) toolset {
	if len(defs) == 0 {
		return toolsFrom(prompt)
	}
	ts := assign(defs)
	if !ts.search && !ts.textSearch && len(ts.unmapped) == len(roles) {
		return toolsFrom(prompt) // nothing defined fits a role
	}
	return ts
}

// ParamsFromSchema reads the parameters of a JSON schema of type object:
// its properties with their types, and which are required.
func ParamsFromSchema(schema []byte) []ToolParam {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var out []ToolParam
	for name, p := range s.Properties {
		typ, _ := p.Type.(string)
		if list, ok := p.Type.([]any); ok && len(list) > 0 { // ["string", "null"]
			typ, _ = list[0].(string)
		}
		if typ == "number" {
			typ = "integer"
		}
		out = append(out, ToolParam{Name: name, Type: typ, Required: req[name]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// callArgs writes a role's canonical arguments in the client tool's names.
func (ts toolset) callArgs(role string, c call) (string, string) {
	rt, ok := ts.tool[role]
	if !ok {
		rt = documented(role)
	}
	var canon map[string]any
	_ = json.Unmarshal([]byte(c.args), &canon)
	out := map[string]any{}
	switch role {
	case ToolSearch, ToolTextSearch:
		out[rt.query] = canon["query"]
		if rt.limit != "" {
			out[rt.limit] = canon["limit"]
		}
	case ToolRead:
		out[rt.id] = canon["id"]
	case ToolReport:
		out[rt.ids] = canon["ids"]
	default:
		return rt.name, c.args
	}
	b, _ := json.Marshal(out)
	return rt.name, string(b)
}

// parseCall reads a tool call of the conversation as a role and its
// canonical arguments: the query, the id to read. Unknown names give "".
func (ts toolset) parseCall(name, args string) (role, query, id string) {
	role = ts.role[name]
	if role == "" {
		for _, r := range roles { // the documented names always read
			if name == r {
				role = r
			}
		}
	}
	rt := ts.tool[role]
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	switch role {
	case ToolSearch, ToolTextSearch:
		if s, ok := m[rt.query].(string); ok && rt.query != "" {
			return role, s, ""
		}
		q, _, _ := toolcall.SearchArgs(args)
		return role, q, ""
	case ToolRead:
		if s, ok := m[rt.id].(string); ok && rt.id != "" {
			return role, "", s
		}
		id, _ := toolcall.ReadArgs(args)
		return role, "", id
	}
	return role, "", ""
}

// toolDefs are the tools the request defines in full: none for the single
// name-only stub, whose name is a placeholder.
func toolDefs(req *domain.ChatRequest) []ToolDef {
	if len(req.Tools) == 1 && req.Tools[0].Description == "" && req.Tools[0].Parameters == nil {
		return nil
	}
	var out []ToolDef
	for _, t := range req.Tools {
		var params []ToolParam
		if t.Parameters != nil {
			b, _ := json.Marshal(t.Parameters)
			params = ParamsFromSchema(b)
		}
		out = append(out, ToolDef{Name: t.Name, Description: t.Description, Params: params})
	}
	return out
}

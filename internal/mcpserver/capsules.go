package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/domain"
)

// SearchInput are the arguments of search and text_search: the query, and
// the wishlist's common filters.
type SearchInput struct {
	Query   string `json:"query" jsonschema:"what to search for"`
	Limit   int    `json:"limit,omitempty" jsonschema:"the most results to return, 1 to 100 (default 10)"`
	Capsule string `json:"capsule,omitempty" jsonschema:"the capsule to search (default: every capsule this credential may use)"`

	Kinds            []string       `json:"kinds,omitempty" jsonschema:"only items of these kinds: text or file"`
	FileTypes        []string       `json:"file_types,omitempty" jsonschema:"only files of these MIME types, such as application/pdf"`
	ItemIDs          []string       `json:"item_ids,omitempty" jsonschema:"only these items"`
	URIPrefix        string         `json:"uri_prefix,omitempty" jsonschema:"only items whose URI starts with this"`
	AddedAfter       string         `json:"added_after,omitempty" jsonschema:"only items added after this RFC 3339 date-time"`
	AddedBefore      string         `json:"added_before,omitempty" jsonschema:"only items added before this RFC 3339 date-time"`
	AuthoredAfter    string         `json:"authored_after,omitempty" jsonschema:"only items authored after this RFC 3339 date-time"`
	AuthoredBefore   string         `json:"authored_before,omitempty" jsonschema:"only items authored before this RFC 3339 date-time"`
	Metadata         map[string]any `json:"metadata,omitempty" jsonschema:"only items whose metadata has each of these keys with exactly this value"`
	MaxChunksPerItem int            `json:"max_chunks_per_item,omitempty" jsonschema:"at most this many chunks of one item, 1 to 100"`
	MinScore         float64        `json:"min_score,omitempty" jsonschema:"only results scoring at least this, 0 to 1"`
}

// SearchResult is one matching chunk.
type SearchResult struct {
	ID        string         `json:"id" jsonschema:"the item's id (pass it to read)"`
	Capsule   string         `json:"capsule"`
	URI       string         `json:"uri" jsonschema:"the item as an MCP resource: capsule://CAPSULE/ID"`
	Title     string         `json:"title" jsonschema:"the item's title, file name or source URI"`
	Chunk     int            `json:"chunk" jsonschema:"the chunk's index within the item"`
	Score     float64        `json:"score" jsonschema:"relevance, 0 to 1"`
	Snippet   string         `json:"snippet" jsonschema:"the matching chunk's text"`
	SourceURI string         `json:"source_uri,omitempty"`
	FileName  string         `json:"file_name,omitempty"`
	FileType  string         `json:"file_type,omitempty"`
	TimeAdded time.Time      `json:"time_added"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// SearchOutput is the result of search and text_search.
type SearchOutput struct {
	Query   string         `json:"query"`
	Mode    string         `json:"mode" jsonschema:"hybrid (search) or keyword (text_search)"`
	Results []SearchResult `json:"results"`
}

// ReadInput are the arguments of read.
type ReadInput struct {
	ID       string `json:"id" jsonschema:"the item's id from a search result, or its capsule://CAPSULE/ID URI"`
	Capsule  string `json:"capsule,omitempty" jsonschema:"the item's capsule (default: found among the capsules this credential may use)"`
	Offset   int    `json:"offset,omitempty" jsonschema:"the first character to return (default 0); pass next_offset to read on"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"the most characters to return, 1 to 100000 (default 20000)"`
}

// ReadOutput is one page of an item's text.
type ReadOutput struct {
	ID         string `json:"id"`
	Capsule    string `json:"capsule"`
	URI        string `json:"uri"`
	Title      string `json:"title"`
	Text       string `json:"text"`
	Offset     int    `json:"offset" jsonschema:"the first character of text within the item"`
	TotalChars int    `json:"total_chars" jsonschema:"the length of the item's whole text, in characters"`
	NextOffset *int   `json:"next_offset" jsonschema:"where the next page starts; null when text reaches the end"`
}

// CapsuleInfo is one capsule of list_capsules.
type CapsuleInfo struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Items       int       `json:"items"`
	Chunks      int       `json:"chunks"`
	CreatedAt   time.Time `json:"created_at"`
}

// ListCapsulesOutput is the result of list_capsules.
type ListCapsulesOutput struct {
	Capsules []CapsuleInfo `json:"capsules"`
}

// Read's page sizes.
const (
	defaultReadChars = 20000
	maxReadChars     = 100000
)

func (t *tools) addCapsuleTools(srv *mcp.Server) {
	searchSchema := func() *jsonschema.Schema {
		return inputSchema[SearchInput](func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength = new(1)
			p["query"].MaxLength = new(domain.MaxQueryBytes)
			intRange(1, domain.MaxQueryLimit)(p["limit"])
			p["kinds"].Items.Enum = []any{string(domain.ItemText), string(domain.ItemFile)}
			for _, k := range []string{"added_after", "added_before", "authored_after", "authored_before"} {
				p[k].Format = "date-time"
			}
			intRange(1, 100)(p["max_chunks_per_item"])
			intRange(0, 1)(p["min_score"])
		})
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "search",
		Title: "Search capsules",
		Description: "Hybrid search (keywords and meaning) over the capsules' documents. Returns the best matching chunks " +
			"with their item id, title, snippet and score, best first. Use read with an id to get the whole text.",
		InputSchema: searchSchema(),
		Annotations: readOnlyAnn,
	}, t.searchTool(domain.ModeHybrid))
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "text_search",
		Title: "Keyword search",
		Description: "Keyword (BM25) search for exact words, names, numbers and phrases in the capsules' documents. " +
			"Same arguments and results as search.",
		InputSchema: searchSchema(),
		Annotations: readOnlyAnn,
	}, t.searchTool(domain.ModeKeyword))
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "read",
		Title:       "Read an item",
		Description: "Returns an item's full text by id, a page at a time: pass next_offset as offset to read on.",
		InputSchema: inputSchema[ReadInput](func(p map[string]*jsonschema.Schema) {
			p["id"].MinLength = new(1)
			p["offset"].Minimum = new(0.0)
			intRange(1, maxReadChars)(p["max_chars"])
		}),
		Annotations: readOnlyAnn,
	}, t.read)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "list_capsules",
		Title:       "List capsules",
		Description: "Lists the capsules this credential may search, with their descriptions and sizes.",
		InputSchema: inputSchema[struct{}](nil),
		Annotations: readOnlyAnn,
	}, t.listCapsules)
}

// allowedCapsules are the capsules p may use, in the service's order.
func (t *tools) allowedCapsules(ctx context.Context, p *domain.Principal) ([]domain.Capsule, error) {
	all, err := t.srv.capsules.ListCapsules(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, c := range all {
		if p.CanCapsule(c.Name) {
			out = append(out, c)
		}
	}
	return out, nil
}

// checkCapsule refuses a capsule outside p's allow-list, as the REST gate does.
func checkCapsule(p *domain.Principal, name string) error {
	if err := domain.ValidateCapsuleName(name); err != nil {
		if e, ok := domain.AsError(err); ok {
			return e.WithParam("capsule")
		}
		return err
	}
	if !p.CanCapsule(name) {
		return &domain.Error{Kind: domain.KindForbidden, Code: "capsule_not_allowed",
			Message: fmt.Sprintf("this credential may not use capsule %q", name)}
	}
	return nil
}

func (t *tools) searchTool(mode domain.SearchMode) mcp.ToolHandlerFor[SearchInput, SearchOutput] {
	name := "search"
	if mode == domain.ModeKeyword {
		name = "text_search"
	}
	return func(ctx context.Context, req *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
		out, err := t.search(ctx, req, in, mode)
		if err != nil {
			return nil, SearchOutput{}, t.toolError(ctx, name, err)
		}
		return text(searchText(out)), out, nil
	}
}

func (t *tools) search(ctx context.Context, req *mcp.CallToolRequest, in SearchInput, mode domain.SearchMode) (SearchOutput, error) {
	p, err := t.principal(req.Extra, domain.ScopeCapsulesRead)
	if err != nil {
		return SearchOutput{}, err
	}
	q, err := queryOf(in, mode)
	if err != nil {
		return SearchOutput{}, err
	}
	var names []string
	if in.Capsule != "" {
		if err := checkCapsule(p, in.Capsule); err != nil {
			return SearchOutput{}, err
		}
		names = []string{in.Capsule}
	} else {
		caps, err := t.allowedCapsules(ctx, p)
		if err != nil {
			return SearchOutput{}, err
		}
		for _, c := range caps {
			names = append(names, c.Name)
		}
	}
	out := SearchOutput{Query: in.Query, Mode: string(mode), Results: []SearchResult{}}
	for _, name := range names {
		hits, err := t.srv.capsules.Query(ctx, name, q)
		if err != nil {
			return SearchOutput{}, err
		}
		for _, h := range hits {
			out.Results = append(out.Results, resultOf(name, h))
		}
	}
	// Several capsules: one list, best first. Scores are in [0, 1] in every
	// capsule; ties keep the capsules' order.
	slices.SortStableFunc(out.Results, func(a, b SearchResult) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(out.Results) > q.Limit {
		out.Results = out.Results[:q.Limit]
	}
	return out, nil
}

// queryOf converts search arguments to a capsule query.
func queryOf(in SearchInput, mode domain.SearchMode) (domain.Query, error) {
	q := domain.Query{Text: in.Query, Limit: in.Limit, Wishlist: domain.Wishlist{Mode: mode}}
	if strings.TrimSpace(in.Query) == "" {
		return q, domain.Invalid("query", "the query must not be empty")
	}
	if q.Limit == 0 {
		q.Limit = domain.DefaultQueryLimit
	}
	if q.Limit < 1 || q.Limit > domain.MaxQueryLimit {
		return q, domain.Invalid("limit", "limit must be from 1 to %d", domain.MaxQueryLimit)
	}
	w := &q.Wishlist
	for _, k := range in.Kinds {
		if k != string(domain.ItemText) && k != string(domain.ItemFile) {
			return q, domain.Invalid("kinds", "kind must be text or file, not %q", k)
		}
		w.Kinds = append(w.Kinds, domain.ItemKind(k))
	}
	w.FileTypes, w.ItemIDs, w.URIPrefix = in.FileTypes, in.ItemIDs, in.URIPrefix
	for _, f := range []struct {
		name string
		in   string
		out  **time.Time
	}{
		{"added_after", in.AddedAfter, &w.AddedAfter}, {"added_before", in.AddedBefore, &w.AddedBefore},
		{"authored_after", in.AuthoredAfter, &w.AuthoredAfter}, {"authored_before", in.AuthoredBefore, &w.AuthoredBefore},
	} {
		if f.in == "" {
			continue
		}
		tm, err := time.Parse(time.RFC3339Nano, f.in)
		if err != nil {
			return q, domain.Invalid(f.name, "%q is not an RFC 3339 date-time", f.in)
		}
		*f.out = &tm
	}
	if w.AddedAfter != nil && w.AddedBefore != nil && !w.AddedAfter.Before(*w.AddedBefore) {
		return q, domain.Invalid("added_before", "added_before must be later than added_after")
	}
	if w.AuthoredAfter != nil && w.AuthoredBefore != nil && !w.AuthoredAfter.Before(*w.AuthoredBefore) {
		return q, domain.Invalid("authored_before", "authored_before must be later than authored_after")
	}
	keys := make([]string, 0, len(in.Metadata))
	for k := range in.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := in.Metadata[k]
		switch v.(type) {
		case string, float64, bool:
		default:
			return q, domain.Invalid("metadata."+k, "a metadata filter value must be a string, number or boolean")
		}
		w.Metadata = append(w.Metadata, domain.MetadataFilter{Key: k, Op: domain.OpEq, Value: v})
	}
	if in.MaxChunksPerItem < 0 || in.MaxChunksPerItem > 100 {
		return q, domain.Invalid("max_chunks_per_item", "max_chunks_per_item must be from 1 to 100")
	}
	w.MaxChunksPerItem = in.MaxChunksPerItem
	if in.MinScore < 0 || in.MinScore > 1 {
		return q, domain.Invalid("min_score", "min_score must be between 0 and 1")
	}
	w.MinScore = in.MinScore
	return q, nil
}

func resultOf(capsule string, h domain.Hit) SearchResult {
	return SearchResult{
		ID: h.Item.ID, Capsule: capsule, URI: resourceURI(capsule, h.Item.ID), Title: title(h.Item),
		Chunk: h.Idx, Score: h.Score, Snippet: h.Content,
		SourceURI: h.Item.URI, FileName: h.Item.FileName, FileType: h.Item.FileType, TimeAdded: h.Item.TimeAdded,
		Metadata: h.Item.Metadata,
	}
}

// title is what names an item to a reader: its metadata title, its file
// name or its source URI.
func title(it domain.Item) string {
	if s, ok := it.Metadata["title"].(string); ok && strings.TrimSpace(s) != "" {
		return s
	}
	if it.FileName != "" {
		return it.FileName
	}
	return it.URI
}

// searchText is the readable form of a search result.
func searchText(out SearchOutput) string {
	if len(out.Results) == 0 {
		return fmt.Sprintf("No results for %q.", out.Query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d results for %q (%s):\n", len(out.Results), out.Query, out.Mode)
	for i, r := range out.Results {
		fmt.Fprintf(&b, "\n[%d] id=%s capsule=%s score=%.3f", i+1, r.ID, r.Capsule, r.Score)
		if r.Title != "" {
			fmt.Fprintf(&b, " title=%q", r.Title)
		}
		fmt.Fprintf(&b, "\n%s\n", oneLine(r.Snippet, 600))
	}
	return b.String()
}

func (t *tools) read(ctx context.Context, req *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, ReadOutput, error) {
	out, err := t.readItem(ctx, req, in)
	if err != nil {
		return nil, ReadOutput{}, t.toolError(ctx, "read", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "id=%s capsule=%s", out.ID, out.Capsule)
	if out.Title != "" {
		fmt.Fprintf(&b, " title=%q", out.Title)
	}
	end := out.Offset + utf8.RuneCountInString(out.Text)
	fmt.Fprintf(&b, " characters %d-%d of %d", out.Offset, end, out.TotalChars)
	if out.NextOffset != nil {
		fmt.Fprintf(&b, " (more: read again with offset %d)", *out.NextOffset)
	}
	b.WriteString("\n\n" + out.Text)
	return text(b.String()), out, nil
}

func (t *tools) readItem(ctx context.Context, req *mcp.CallToolRequest, in ReadInput) (ReadOutput, error) {
	p, err := t.principal(req.Extra, domain.ScopeCapsulesRead)
	if err != nil {
		return ReadOutput{}, err
	}
	id, capsule := in.ID, in.Capsule
	if c, i, ok := parseResourceURI(id); ok {
		if capsule != "" && capsule != c {
			return ReadOutput{}, domain.Invalid("capsule", "capsule %q differs from the one in the id's URI (%q)", capsule, c)
		}
		id, capsule = i, c
	}
	if strings.TrimSpace(id) == "" {
		return ReadOutput{}, domain.Invalid("id", "id must not be empty")
	}
	if in.Offset < 0 {
		return ReadOutput{}, domain.Invalid("offset", "offset must not be negative")
	}
	limit := in.MaxChars
	if limit == 0 {
		limit = defaultReadChars
	}
	if limit < 1 || limit > maxReadChars {
		return ReadOutput{}, domain.Invalid("max_chars", "max_chars must be from 1 to %d", maxReadChars)
	}
	if capsule == "" {
		if capsule, err = t.findItem(ctx, p, id); err != nil {
			return ReadOutput{}, err
		}
	} else if err := checkCapsule(p, capsule); err != nil {
		return ReadOutput{}, err
	}
	it, body, err := t.srv.capsules.ItemText(ctx, capsule, id)
	if err != nil {
		return ReadOutput{}, err
	}
	runes := []rune(body)
	start := min(in.Offset, len(runes))
	end := min(start+limit, len(runes))
	out := ReadOutput{ID: it.ID, Capsule: capsule, URI: resourceURI(capsule, it.ID), Title: title(it),
		Text: string(runes[start:end]), Offset: start, TotalChars: len(runes)}
	if end < len(runes) {
		out.NextOffset = &end
	}
	return out, nil
}

// findItem returns the capsule, among those p may use, that holds the item.
func (t *tools) findItem(ctx context.Context, p *domain.Principal, id string) (string, error) {
	caps, err := t.allowedCapsules(ctx, p)
	if err != nil {
		return "", err
	}
	for _, c := range caps {
		_, err := t.srv.capsules.GetItem(ctx, c.Name, id)
		if err == nil {
			return c.Name, nil
		}
		if domain.KindOf(err) != domain.KindNotFound {
			return "", err
		}
	}
	return "", domain.NotFound("item", id)
}

func (t *tools) listCapsules(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListCapsulesOutput, error) {
	p, err := t.principal(req.Extra, domain.ScopeCapsulesRead)
	if err != nil {
		return nil, ListCapsulesOutput{}, t.toolError(ctx, "list_capsules", err)
	}
	caps, err := t.allowedCapsules(ctx, p)
	if err != nil {
		return nil, ListCapsulesOutput{}, t.toolError(ctx, "list_capsules", err)
	}
	out := ListCapsulesOutput{Capsules: []CapsuleInfo{}}
	var b strings.Builder
	if len(caps) == 0 {
		b.WriteString("No capsules.")
	}
	for _, c := range caps {
		out.Capsules = append(out.Capsules, CapsuleInfo{Name: c.Name, Description: c.Description, Items: c.ItemCount, Chunks: c.ChunkCount, CreatedAt: c.CreatedAt})
		fmt.Fprintf(&b, "%s: %d items, %d chunks", c.Name, c.ItemCount, c.ChunkCount)
		if c.Description != "" {
			fmt.Fprintf(&b, " — %s", oneLine(c.Description, 200))
		}
		b.WriteString("\n")
	}
	return text(b.String()), out, nil
}

package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

// RememberInput are the arguments of remember.
type RememberInput struct {
	Content   string         `json:"content" jsonschema:"what to remember, in plain words"`
	Namespace string         `json:"namespace,omitempty" jsonschema:"the memory namespace (default global)"`
	Kind      string         `json:"kind,omitempty" jsonschema:"note (default) or fact"`
	Metadata  map[string]any `json:"metadata,omitempty" jsonschema:"free-form metadata stored with the memory"`
}

// MemoryInfo is one memory in a tool result.
type MemoryInfo struct {
	ID        string    `json:"id"`
	Namespace string    `json:"namespace"`
	Kind      string    `json:"kind"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
	ValidFrom time.Time `json:"valid_from"`
	Score     *float64  `json:"score,omitempty" jsonschema:"relevance to the query (recall)"`
	Tokens    int       `json:"tokens,omitempty" jsonschema:"the memory's size in the budget (recall)"`
}

// RecallInput are the arguments of recall.
type RecallInput struct {
	Query        string `json:"query" jsonschema:"what to recall memories about"`
	Namespace    string `json:"namespace,omitempty" jsonschema:"the memory namespace (default global)"`
	BudgetTokens int    `json:"budget_tokens,omitempty" jsonschema:"the most tokens of memories to return, 1 to 32000 (default: the server's memory budget)"`
}

// RecallOutput is the result of recall.
type RecallOutput struct {
	Namespace string       `json:"namespace"`
	Memories  []MemoryInfo `json:"memories" jsonschema:"the memories that fit the budget, most relevant first"`
	Tokens    int          `json:"tokens" jsonschema:"the memories' total size in tokens"`
}

// ForgetInput are the arguments of forget.
type ForgetInput struct {
	ID        string `json:"id" jsonschema:"the memory's id"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the memory namespace (default global)"`
}

// ForgetOutput is the result of forget.
type ForgetOutput struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Deleted   bool   `json:"deleted"`
}

const maxRecallBudget = 32000

func (t *tools) addMemoryTools(srv *mcp.Server, readOnly bool) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "recall",
		Title: "Recall memories",
		Description: "Selects what is remembered in a namespace about a query (hybrid search over notes, facts and past " +
			"conversation turns), most relevant first, as many as fit the token budget.",
		InputSchema: inputSchema[RecallInput](func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength = new(1)
			intRange(1, maxRecallBudget)(p["budget_tokens"])
		}),
		Annotations: readOnlyAnn,
	}, t.recall)
	if readOnly {
		return
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "remember",
		Title:       "Remember",
		Description: "Stores a note (or a fact) in a memory namespace, as given; recall finds it later.",
		InputSchema: inputSchema[RememberInput](func(p map[string]*jsonschema.Schema) {
			p["content"].MinLength = new(1)
			p["kind"].Enum = []any{string(domain.MemoryNote), string(domain.MemoryFact)}
		}),
		Annotations: additive,
	}, t.remember)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "forget",
		Title:       "Forget",
		Description: "Deletes one memory by id from a namespace.",
		InputSchema: inputSchema[ForgetInput](func(p map[string]*jsonschema.Schema) {
			p["id"].MinLength = new(1)
		}),
		Annotations: destructive,
	}, t.forget)
}

// memoryNamespace checks that the call's credential has the memory scope
// and may use the namespace argument ns ("" is the global namespace), and
// returns the namespace: the preamble of every memory tool.
func (t *tools) memoryNamespace(req *mcp.CallToolRequest, ns string) (string, error) {
	p, err := t.principal(req.Extra, domain.ScopeMemory)
	if err != nil {
		return "", err
	}
	if ns == "" {
		ns = domain.GlobalNamespace
	}
	if err := domain.ValidateNamespace(ns); err != nil {
		return "", err
	}
	if !p.CanNamespace(ns) {
		return "", &domain.Error{Kind: domain.KindForbidden, Code: "namespace_not_allowed",
			Message: fmt.Sprintf("this credential may not use namespace %q", ns)}
	}
	return ns, nil
}

func memoryInfo(m domain.Memory) MemoryInfo {
	return MemoryInfo{ID: m.ID, Namespace: m.Namespace, Kind: string(m.Kind), Content: m.Content, CreatedAt: m.CreatedAt, ValidFrom: m.ValidFrom}
}

func (t *tools) remember(ctx context.Context, req *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, MemoryInfo, error) {
	fail := func(err error) (*mcp.CallToolResult, MemoryInfo, error) {
		return nil, MemoryInfo{}, t.toolError(ctx, "remember", err)
	}
	ns, err := t.memoryNamespace(req, in.Namespace)
	if err != nil {
		return fail(err)
	}
	m, err := t.srv.memory.Add(ctx, ns, memory.NewMemory{Content: in.Content, Kind: domain.MemoryKind(in.Kind), Metadata: in.Metadata})
	if err != nil {
		return fail(err)
	}
	return text(fmt.Sprintf("Remembered in namespace %s as %s (%s).", ns, m.ID, m.Kind)), memoryInfo(m), nil
}

func (t *tools) recall(ctx context.Context, req *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, RecallOutput, error) {
	fail := func(err error) (*mcp.CallToolResult, RecallOutput, error) {
		return nil, RecallOutput{}, t.toolError(ctx, "recall", err)
	}
	ns, err := t.memoryNamespace(req, in.Namespace)
	if err != nil {
		return fail(err)
	}
	if strings.TrimSpace(in.Query) == "" {
		return fail(domain.Invalid("query", "the query must not be empty"))
	}
	if in.BudgetTokens < 0 || in.BudgetTokens > maxRecallBudget {
		return fail(domain.Invalid("budget_tokens", "budget_tokens must be from 1 to %d", maxRecallBudget))
	}
	sel, err := t.srv.memory.Select(ctx, memory.Query{Namespace: ns, Text: in.Query, BudgetTokens: in.BudgetTokens, Mode: memory.Hybrid})
	if err != nil {
		return fail(err)
	}
	out := RecallOutput{Namespace: ns, Memories: []MemoryInfo{}, Tokens: sel.Tokens}
	var b strings.Builder
	if len(sel.Packed) == 0 {
		fmt.Fprintf(&b, "Nothing remembered in namespace %s about %q.", ns, in.Query)
	} else {
		fmt.Fprintf(&b, "%d memories from namespace %s (%d tokens):\n", len(sel.Packed), ns, sel.Tokens)
	}
	for _, s := range sel.Packed {
		mi := memoryInfo(s.Memory)
		score := s.Score
		mi.Score, mi.Tokens = &score, s.Tokens
		out.Memories = append(out.Memories, mi)
		fmt.Fprintf(&b, "- id=%s kind=%s score=%.3f date=%s: %s\n", mi.ID, mi.Kind, score, mi.ValidFrom.Format("2006-01-02"), oneLine(mi.Content, 1000))
	}
	return text(b.String()), out, nil
}

func (t *tools) forget(ctx context.Context, req *mcp.CallToolRequest, in ForgetInput) (*mcp.CallToolResult, ForgetOutput, error) {
	fail := func(err error) (*mcp.CallToolResult, ForgetOutput, error) {
		return nil, ForgetOutput{}, t.toolError(ctx, "forget", err)
	}
	ns, err := t.memoryNamespace(req, in.Namespace)
	if err != nil {
		return fail(err)
	}
	if strings.TrimSpace(in.ID) == "" {
		return fail(domain.Invalid("id", "id must not be empty"))
	}
	if err := t.srv.memory.Delete(ctx, ns, in.ID); err != nil {
		return fail(err)
	}
	return text(fmt.Sprintf("Forgot %s in namespace %s.", in.ID, ns)), ForgetOutput{ID: in.ID, Namespace: ns, Deleted: true}, nil
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/toolcall"
)

// SystemPrompt is the prompt the loop sends by default: it names the four
// tools and their arguments, as the interface asks of a client.
const SystemPrompt = `You are a retrieval agent. Find the documents that best answer the user's question. You cannot answer from memory: use the tools.

Tools:
- search: semantic search. Arguments: {"query": string, "limit": integer}.
- text_search: exact keyword and phrase search. Arguments: {"query": string, "limit": integer}.
- read: fetch a document's full text. Arguments: {"id": string}.
- report_helpful_ids: report the ids of the documents that best answer the question, most helpful first. Arguments: {"ids": [string]}. Call it once, at the end.

You may call several tools at once.`

// A Hit is one search result of the backend.
type Hit struct {
	ID    string  `json:"id"`
	Title string  `json:"title,omitempty"`
	Text  string  `json:"content"`
	Score float64 `json:"score,omitempty"`
}

// Backend runs the tools against a search index.
type Backend interface {
	Search(ctx context.Context, query string, limit int) ([]Hit, error)
	TextSearch(ctx context.Context, query string, limit int) ([]Hit, error)
	Read(ctx context.Context, id string) (string, error)
}

// Model answers one turn of the conversation.
type Model interface {
	Turn(ctx context.Context, msgs []domain.Message) (domain.Choice, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, msgs []domain.Message) (domain.Choice, error)

// Turn calls f.
func (f ModelFunc) Turn(ctx context.Context, msgs []domain.Message) (domain.Choice, error) {
	return f(ctx, msgs)
}

// Completer is the chat service, for running the loop in process.
type Completer interface {
	Complete(ctx context.Context, req *domain.ChatRequest) (*domain.Completion, error)
}

// InProcess is a Model over a chat service: each turn is a svc-1 request
// with the tool stub.
func InProcess(c Completer) Model {
	return ModelFunc(func(ctx context.Context, msgs []domain.Message) (domain.Choice, error) {
		comp, err := c.Complete(ctx, &domain.ChatRequest{
			Model: "svc-1", Messages: msgs, ToolStub: true, ToolChoice: domain.ToolChoice{Mode: domain.ToolChoiceAuto},
			N: 1, IncludeReasoning: true, ParallelToolCalls: true, AddGenerationPrompt: true,
		})
		if err != nil {
			return domain.Choice{}, err
		}
		if len(comp.Choices) == 0 {
			return domain.Choice{}, errors.New("agent: the reply has no choice")
		}
		return comp.Choices[0], nil
	})
}

// Config configures a run. Zero fields take the defaults.
type Config struct {
	SystemPrompt string // default SystemPrompt
	MaxTurns     int    // default 8
	Limit        int    // limit when a call gives none; default 10
	// ResultChars cuts each hit's text in tool results (with "…"), so that
	// read has something to add; default 600, negative for no cut.
	ResultChars int
}

func (c Config) withDefaults() Config {
	if c.SystemPrompt == "" {
		c.SystemPrompt = SystemPrompt
	}
	if c.MaxTurns <= 0 {
		c.MaxTurns = 8
	}
	if c.Limit <= 0 {
		c.Limit = 10
	}
	if c.ResultChars == 0 {
		c.ResultChars = 600
	}
	return c
}

// A Step is one turn of the trace.
type Step struct {
	Turn      int             `json:"turn"`
	Content   string          `json:"content"`
	ToolCalls []TraceCall     `json:"tool_calls,omitempty"`
	Duration  time.Duration   `json:"duration_ns"`
	Model     time.Duration   `json:"model_ns"`
	Finish    string          `json:"finish_reason"`
	Extra     json.RawMessage `json:"-"`
}

// A TraceCall is one tool call and what it returned.
type TraceCall struct {
	Name      string   `json:"name"`
	Arguments string   `json:"arguments"`
	ResultIDs []string `json:"result_ids,omitempty"`
	// ResultBytes is the size of the tool message sent back to the model.
	ResultBytes int    `json:"result_bytes"`
	Error       string `json:"error,omitempty"`
}

// Result is the outcome of a run.
type Result struct {
	IDs       []string       `json:"ids"`      // reported, most helpful first
	Reported  bool           `json:"reported"` // false when the turn limit ended the loop
	Turns     int            `json:"turns"`
	ToolCalls int            `json:"tool_calls"`
	Trace     []Step         `json:"trace"`
	Evidence  map[string]Hit `json:"-"` // the best text seen of each id
	ModelTime time.Duration  `json:"model_ns"`
}

// Run runs the loop for one question.
func Run(ctx context.Context, m Model, b Backend, question string, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	msgs := []domain.Message{
		domain.TextMessage(domain.RoleSystem, cfg.SystemPrompt),
		domain.TextMessage(domain.RoleUser, question),
	}
	res := &Result{Evidence: map[string]Hit{}}
	for turn := 1; turn <= cfg.MaxTurns; turn++ {
		start := time.Now()
		choice, err := m.Turn(ctx, msgs)
		modelTime := time.Since(start)
		res.ModelTime += modelTime
		if err != nil {
			return res, fmt.Errorf("turn %d: %w", turn, err)
		}
		res.Turns = turn
		step := Step{Turn: turn, Content: choice.Content, Finish: choice.FinishReason, Model: modelTime}
		if len(choice.ToolCalls) == 0 {
			step.Duration = time.Since(start)
			res.Trace = append(res.Trace, step)
			return res, nil
		}
		assistant := domain.Message{Role: domain.RoleAssistant, ToolCalls: choice.ToolCalls}
		if choice.Content != "" {
			assistant.Content = []domain.Part{{Type: domain.PartText, Text: choice.Content}}
		}
		msgs = append(msgs, assistant)
		done := false
		for _, tc := range choice.ToolCalls {
			res.ToolCalls++
			out, tr := runTool(ctx, b, tc, cfg, res)
			tr.ResultBytes = len(out)
			step.ToolCalls = append(step.ToolCalls, tr)
			msgs = append(msgs, domain.Message{Role: domain.RoleTool, ToolCallID: tc.ID, Content: []domain.Part{{Type: domain.PartText, Text: out}}})
			if tc.Name == "report_helpful_ids" {
				ids, _ := toolcall.ReportArgs(tc.Arguments)
				res.IDs, res.Reported, done = ids, true, true
			}
		}
		step.Duration = time.Since(start)
		res.Trace = append(res.Trace, step)
		if done {
			return res, nil
		}
	}
	return res, nil
}

func runTool(ctx context.Context, b Backend, tc domain.ToolCall, cfg Config, res *Result) (string, TraceCall) {
	tr := TraceCall{Name: tc.Name, Arguments: tc.Arguments}
	fail := func(err error) (string, TraceCall) {
		tr.Error = err.Error()
		out, _ := json.Marshal(map[string]string{"error": err.Error()})
		return string(out), tr
	}
	switch tc.Name {
	case "search", "text_search":
		q, limit, err := toolcall.SearchArgs(tc.Arguments)
		if err != nil {
			return fail(err)
		}
		if limit <= 0 {
			limit = cfg.Limit
		}
		limit = min(limit, 100)
		var hits []Hit
		if tc.Name == "search" {
			hits, err = b.Search(ctx, q, limit)
		} else {
			hits, err = b.TextSearch(ctx, q, limit)
		}
		if err != nil {
			return fail(err)
		}
		shown := make([]Hit, len(hits))
		for i, h := range hits {
			if old, ok := res.Evidence[h.ID]; !ok || len(h.Text) > len(old.Text) {
				res.Evidence[h.ID] = h
			}
			tr.ResultIDs = append(tr.ResultIDs, h.ID)
			if cfg.ResultChars > 0 && len(h.Text) > cfg.ResultChars {
				h.Text = cutText(h.Text, cfg.ResultChars) + "…"
			}
			shown[i] = h
		}
		out, _ := json.Marshal(shown)
		return string(out), tr
	case "read":
		id, err := toolcall.ReadArgs(tc.Arguments)
		if err != nil {
			return fail(err)
		}
		text, err := b.Read(ctx, id)
		if err != nil {
			return fail(err)
		}
		tr.ResultIDs = []string{id}
		out, _ := json.Marshal(Hit{ID: id, Text: text})
		return string(out), tr
	case "report_helpful_ids":
		return `{"ok":true}`, tr
	default:
		return fail(fmt.Errorf("unknown tool %q", tc.Name))
	}
}

// cutText cuts s to at most n bytes at a space.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > n/2 {
		return s[:i]
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

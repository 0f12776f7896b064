package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"capsuled/internal/chatwire"
	"capsuled/internal/domain"
	"capsuled/internal/oai"
	"capsuled/internal/reasoning"
	"capsuled/internal/toolcall"
)

// Config configures the upstream engine.
type Config struct {
	URL     string        // base URL ending in /v1
	Model   string        // the upstream's model name
	Key     string        // optional bearer key
	Timeout time.Duration // per call; default 60s
	Client  *http.Client  // default: a client with no overall time-out (Timeout bounds each call)
	// ToolParser and ReasoningParser name the parsers (vLLM's names) that
	// read tool calls and reasoning the server left in the text; "" is
	// toolcall.DefaultParser and reasoning.DefaultParser.
	ToolParser, ReasoningParser string
}

// Engine is the upstream engine.
type Engine struct {
	cfg       Config
	client    *oai.Client
	tools     toolcall.Parser
	reasoning reasoning.Parser
}

// New checks the configuration and returns the engine.
func New(cfg Config) (*Engine, error) {
	if cfg.URL == "" || cfg.Model == "" {
		return nil, errors.New("upstream: --upstream-url and --upstream-model are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	client, err := oai.New(oai.Config{URL: cfg.URL, Key: cfg.Key, Timeout: cfg.Timeout, HTTP: cfg.Client, Name: "the upstream engine"})
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	tools, err := toolcall.Lookup(cfg.ToolParser)
	if err != nil {
		return nil, fmt.Errorf("upstream: --upstream-tool-parser: %w", err)
	}
	reasoner, err := reasoning.Lookup(cfg.ReasoningParser)
	if err != nil {
		return nil, fmt.Errorf("upstream: --upstream-reasoning-parser: %w", err)
	}
	return &Engine{cfg: cfg, client: client, tools: tools, reasoning: reasoner}, nil
}

// Name is "upstream".
func (e *Engine) Name() string { return "upstream" }

// Check accepts every parameter: they all pass through.
func (e *Engine) Check(*domain.ChatRequest) error { return nil }

// Generate sends the request upstream and normalises the reply.
func (e *Engine) Generate(ctx context.Context, req *domain.ChatRequest) ([]domain.Choice, *domain.Usage, error) {
	body, err := e.body(req)
	if err != nil {
		return nil, nil, err
	}
	c, err := e.client.Chat(ctx, json.RawMessage(body), req.Stream)
	if err != nil {
		return nil, nil, err
	}
	choices := make([]domain.Choice, 0, len(c.Choices))
	for _, ch := range c.Choices {
		choices = append(choices, e.normalise(ch.Index, ch.Message, ch.FinishReason))
	}
	var usage *domain.Usage
	if c.Usage != nil {
		usage = &domain.Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens}
	}
	return choices, usage, nil
}

// body is the client's request as the upstream receives it: its pass-through
// fields and messages with the upstream's model, asking for usage when
// streaming. Capsuled's extensions and echo (which the chat service applies
// to every engine's reply) are not sent.
func (e *Engine) body(req *domain.ChatRequest) ([]byte, error) {
	b, err := json.Marshal(chatwire.Body(e.cfg.Model, req.Messages, req, req.Stream))
	if err != nil {
		return nil, fmt.Errorf("upstream: encode the request: %w", err)
	}
	return b, nil
}

// normalise turns one upstream message into a choice: structured tool
// calls kept; else the calls the tool-call parser finds in the content and
// in the reasoning (a model may write its calls while reasoning: they are
// calls all the same, after those of the content); reasoning from the
// server's field, else split out of the content by the reasoning parser.
func (e *Engine) normalise(index int, m oai.Message, finish string) domain.Choice {
	content := m.Text()
	reasoningText := m.ReasoningText()
	var calls []toolcall.Call
	for _, tc := range m.ToolCalls {
		if tc.Function.Name == "" {
			continue
		}
		calls = append(calls, toolcall.Call{Name: tc.Function.Name, Arguments: toolcall.NormalizeArguments(tc.Function.Arguments)})
	}
	ids := make([]string, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		ids[i] = tc.ID
	}
	if reasoningText == "" {
		reasoningText, content = e.reasoning.Split(content)
	}
	inContent, content := e.tools.Parse(content)
	inReasoning, reasoningText := e.tools.Parse(reasoningText)
	if len(calls) == 0 {
		calls = append(inContent, inReasoning...)
	}
	ch := domain.Choice{Index: index, Content: content, Reasoning: reasoningText, FinishReason: finish}
	for i, c := range calls {
		id := ""
		if i < len(ids) {
			id = ids[i]
		}
		if id == "" {
			id = callID(i, c.Name, c.Arguments)
		}
		ch.ToolCalls = append(ch.ToolCalls, domain.ToolCall{ID: id, Type: "function", Name: c.Name, Arguments: c.Arguments})
	}
	switch {
	case len(ch.ToolCalls) > 0:
		ch.FinishReason = domain.FinishToolCalls
	case ch.FinishReason != domain.FinishLength:
		ch.FinishReason = domain.FinishStop
	}
	return ch
}

// callID is the id of a call the server sent without one: derived from the
// call, so the same reply always gets the same ids.
func callID(i int, name, args string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", i, name, args)))
	return "call_" + hex.EncodeToString(h[:6])
}

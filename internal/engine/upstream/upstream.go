package upstream

import (
	"context"
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

// normalise turns one upstream message into a choice, with the engine's
// parsers (chatwire.Choice).
func (e *Engine) normalise(index int, m oai.Message, finish string) domain.Choice {
	return chatwire.Choice(index, m, finish, chatwire.Parsers{Tools: &e.tools, Reasoning: &e.reasoning})
}

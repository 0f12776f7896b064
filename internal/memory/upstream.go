package memory

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"capsuled/internal/chatwire"
	"capsuled/internal/domain"
	"capsuled/internal/oai"
)

// UpstreamConfig configures an OpenAI-compatible upstream server.
type UpstreamConfig struct {
	// URL is the server's base URL, ending in /v1 (…/chat/completions is
	// appended). Required.
	URL string
	// Models are the model ids it serves, as the memory operation accepts
	// them. Required.
	Models []string
	// Key is sent as Authorization: Bearer when set.
	Key string
	// Timeout bounds one request. Default 120s.
	Timeout time.Duration
	// Client is the HTTP client. Default: oai's.
	Client *http.Client
}

// Upstream generates replies (and extracts facts) with an OpenAI-compatible
// chat completions server such as vLLM, through capsuled's one client of
// such servers (internal/oai, which maps the server's failures).
type Upstream struct {
	cfg    UpstreamConfig
	client *oai.Client
}

// NewUpstream returns an Upstream after checking its configuration.
func NewUpstream(cfg UpstreamConfig) (*Upstream, error) {
	if len(cfg.Models) == 0 {
		return nil, errors.New("memory upstream: at least one model is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 120 * time.Second
	}
	client, err := oai.New(oai.Config{URL: cfg.URL, Key: cfg.Key, Timeout: cfg.Timeout, HTTP: cfg.Client, Name: "the memory model server"})
	if err != nil {
		return nil, fmt.Errorf("memory upstream: %w", err)
	}
	return &Upstream{cfg: cfg, client: client}, nil
}

// Models returns the configured models.
func (u *Upstream) Models() []string { return append([]string(nil), u.cfg.Models...) }

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Name    string `json:"name,omitempty"`
}

// wireRequest is the request of a fact extraction.
type wireRequest struct {
	Model          string         `json:"model"`
	Messages       []wireMessage  `json:"messages"`
	Temperature    *float64       `json:"temperature,omitempty"`
	ResponseFormat map[string]any `json:"response_format,omitempty"`
	Stream         bool           `json:"stream"`
}

// Generate sends the prompt to the upstream model.
func (u *Upstream) Generate(ctx context.Context, in GenerateInput) (domain.Completion, error) {
	// The caller's request as the svc-1 upstream engine forwards it, with
	// the prompt that holds the memory block.
	resp, err := u.client.Chat(ctx, chatwire.Body(in.Model, promptMessages(in.Messages), &in.Request, false), false)
	if err != nil {
		return domain.Completion{}, err
	}
	c := domain.Completion{ID: resp.ID, Model: in.Model, SystemFingerprint: resp.SystemFingerprint}
	if resp.Created > 0 {
		c.Created = time.Unix(resp.Created, 0)
	}
	for _, ch := range resp.Choices {
		// The server's structured tool calls are the reply's (a client that
		// sends tools gets the calls, as from svc-1); memory chat has no
		// parsers for calls written as text.
		c.Choices = append(c.Choices, chatwire.Choice(ch.Index, ch.Message, ch.FinishReason, chatwire.Parsers{}))
	}
	if resp.Usage != nil {
		c.Usage = domain.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	}
	return c, nil
}

// Extractor returns an Extractor that asks model (default the first
// configured model) for facts as JSON.
func (u *Upstream) Extractor(model string) Extractor {
	if model == "" {
		model = u.cfg.Models[0]
	}
	return upstreamExtractor{u: u, model: model}
}

type upstreamExtractor struct {
	u     *Upstream
	model string
}

func (e upstreamExtractor) Extract(ctx context.Context, in ExtractInput) ([]Fact, domain.Usage, error) {
	zero := 0.0
	resp, err := e.u.client.Chat(ctx, wireRequest{Model: e.model, Messages: toWire(extractionMessages(in)), Temperature: &zero,
		ResponseFormat: map[string]any{"type": "json_object"}}, false)
	if err != nil {
		return nil, domain.Usage{}, err
	}
	var usage domain.Usage
	if resp.Usage != nil {
		usage = domain.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	}
	if resp.Choices[0].Message.Content == nil {
		return nil, usage, errors.New("extraction answer has no content")
	}
	facts, err := ParseFacts(*resp.Choices[0].Message.Content)
	return facts, usage, err
}

// promptMessages keeps the messages that have a place in a memory chat
// prompt: tool and custom messages have none.
func promptMessages(msgs []domain.Message) []domain.Message {
	out := make([]domain.Message, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case domain.RoleSystem, domain.RoleDeveloper, domain.RoleUser, domain.RoleAssistant:
			out = append(out, m)
		}
	}
	return out
}

func toWire(msgs []domain.Message) []wireMessage {
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		role := m.Role
		if role != domain.RoleSystem && role != domain.RoleDeveloper && role != domain.RoleUser && role != domain.RoleAssistant {
			continue // tool and custom messages have no place in a memory chat prompt
		}
		out = append(out, wireMessage{Role: role, Content: m.Text(), Name: m.Name})
	}
	return out
}

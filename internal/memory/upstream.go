package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"capsuled/internal/domain"
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
	// Client is the HTTP client. Default: one with Timeout.
	Client *http.Client
}

// Upstream generates replies (and extracts facts) with an OpenAI-compatible
// chat completions server such as vLLM.
type Upstream struct {
	cfg UpstreamConfig
}

// NewUpstream returns an Upstream after checking its configuration.
func NewUpstream(cfg UpstreamConfig) (*Upstream, error) {
	if cfg.URL == "" || !(strings.HasPrefix(cfg.URL, "http://") || strings.HasPrefix(cfg.URL, "https://")) {
		return nil, fmt.Errorf("memory upstream: URL %q must start with http:// or https://", cfg.URL)
	}
	if len(cfg.Models) == 0 {
		return nil, errors.New("memory upstream: at least one model is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	return &Upstream{cfg: cfg}, nil
}

// Models returns the configured models.
func (u *Upstream) Models() []string { return append([]string(nil), u.cfg.Models...) }

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Name    string `json:"name,omitempty"`
}

type wireRequest struct {
	Model          string         `json:"model"`
	Messages       []wireMessage  `json:"messages"`
	MaxTokens      *int           `json:"max_tokens,omitempty"`
	Temperature    *float64       `json:"temperature,omitempty"`
	TopP           *float64       `json:"top_p,omitempty"`
	Stop           []string       `json:"stop,omitempty"`
	Seed           *int64         `json:"seed,omitempty"`
	ResponseFormat map[string]any `json:"response_format,omitempty"`
	Stream         bool           `json:"stream"`
}

type wireResponse struct {
	ID                string `json:"id"`
	Created           int64  `json:"created"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index   int `json:"index"`
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Generate sends the prompt to the upstream model.
func (u *Upstream) Generate(ctx context.Context, in GenerateInput) (domain.Completion, error) {
	r := in.Request
	req := wireRequest{Model: in.Model, Messages: toWire(in.Messages), MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, Stop: r.Stop, Seed: r.Seed}
	resp, err := u.complete(ctx, req)
	if err != nil {
		return domain.Completion{}, err
	}
	c := domain.Completion{ID: resp.ID, Model: in.Model, SystemFingerprint: resp.SystemFingerprint}
	if resp.Created > 0 {
		c.Created = time.Unix(resp.Created, 0)
	}
	for _, ch := range resp.Choices {
		text := ""
		if ch.Message.Content != nil {
			text = *ch.Message.Content
		}
		fr := ch.FinishReason
		if fr != domain.FinishLength {
			fr = domain.FinishStop
		}
		c.Choices = append(c.Choices, domain.Choice{Index: ch.Index, Content: text, FinishReason: fr})
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

func (e upstreamExtractor) Extract(ctx context.Context, in ExtractInput) ([]Fact, error) {
	zero := 0.0
	resp, err := e.u.complete(ctx, wireRequest{Model: e.model, Messages: toWire(extractionMessages(in)), Temperature: &zero,
		ResponseFormat: map[string]any{"type": "json_object"}})
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == nil {
		return nil, errors.New("extraction answer has no content")
	}
	return ParseFacts(*resp.Choices[0].Message.Content)
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

// complete posts one request and decodes the answer, mapping failures to
// 502 (refused or garbage), 503 (unreachable) and 504 (timed out).
func (u *Upstream) complete(ctx context.Context, req wireRequest) (wireResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return wireResponse{}, fmt.Errorf("encode upstream request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return wireResponse{}, fmt.Errorf("upstream request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if u.cfg.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+u.cfg.Key)
	}
	resp, err := u.cfg.Client.Do(hr)
	if err != nil {
		return wireResponse{}, upstreamError(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return wireResponse{}, upstreamError(err)
	}
	if resp.StatusCode != http.StatusOK {
		return wireResponse{}, &domain.Error{Kind: domain.KindUpstream, Code: "upstream_status",
			Message: fmt.Sprintf("the upstream model server answered %d", resp.StatusCode), Err: fmt.Errorf("%.500s", raw)}
	}
	var out wireResponse
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return wireResponse{}, &domain.Error{Kind: domain.KindUpstream, Code: "upstream_bad_response",
			Message: "the upstream model server sent a response that is not a chat completion", Err: err}
	}
	return out, nil
}

func upstreamError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return &domain.Error{Kind: domain.KindTimeout, Code: "upstream_timeout", Message: "the upstream model server did not answer in time", Err: err}
	case errors.Is(err, context.Canceled):
		return err
	default:
		return &domain.Error{Kind: domain.KindUnavailable, Code: "upstream_unreachable", Message: "the upstream model server cannot be reached", Err: err}
	}
}

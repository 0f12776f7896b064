package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"capsuled/internal/domain"
	"capsuled/internal/think"
)

// Model is the one model id of the retrieval chat.
const Model = "svc-1"

// Engine generates the assistant reply of one turn.
type Engine interface {
	// Name names the engine in error messages ("builtin", "upstream").
	Name() string
	// Check refuses a request parameter the engine cannot honour, with a
	// *domain.Error of code unsupported_parameter naming it.
	Check(req *domain.ChatRequest) error
	// Generate returns the reply's choices (at least one; fewer than req.N
	// are repeated) and, when the engine counted them itself, the usage.
	// A choice's Reasoning is put into a <think> block by the Service.
	Generate(ctx context.Context, req *domain.ChatRequest) ([]domain.Choice, *domain.Usage, error)
}

// TokenCounter counts the tokens of a text for usage.
type TokenCounter interface {
	CountTokens(text string) int
}

// Config configures a Service.
type Config struct {
	Engine  Engine
	Counter TokenCounter
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Fingerprint is the reply's system_fingerprint (default "capsuled-<engine>").
	Fingerprint string
}

// Service serves svc-1 chat completions over one engine.
type Service struct {
	cfg Config
}

// New returns a Service; Engine and Counter are required.
func New(cfg Config) (*Service, error) {
	if cfg.Engine == nil || cfg.Counter == nil {
		return nil, fmt.Errorf("chat: an engine and a token counter are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Fingerprint == "" {
		cfg.Fingerprint = "capsuled-" + cfg.Engine.Name()
	}
	return &Service{cfg: cfg}, nil
}

// Engine is the name of the serving engine.
func (s *Service) Engine() string { return s.cfg.Engine.Name() }

// Check applies the rules that need no generation: the model id and the
// parameters the engine cannot honour. Call it before a stream begins.
func (s *Service) Check(req *domain.ChatRequest) error {
	if req.Model != Model {
		return &domain.Error{Kind: domain.KindNotFound, Code: "model_not_found", Param: "model",
			Message: fmt.Sprintf("the model %q does not exist; this operation serves %q", truncate(req.Model, 64), Model)}
	}
	return s.cfg.Engine.Check(req)
}

// Complete runs one turn.
func (s *Service) Complete(ctx context.Context, req *domain.ChatRequest) (*domain.Completion, error) {
	if err := s.Check(req); err != nil {
		return nil, err
	}
	choices, usage, err := s.cfg.Engine.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(choices) == 0 {
		return nil, fmt.Errorf("chat: engine %s returned no choice", s.cfg.Engine.Name())
	}
	n := max(req.N, 1)
	out := make([]domain.Choice, n)
	completion := 0
	for i := range n {
		c := choices[min(i, len(choices)-1)]
		c = s.shape(req, c)
		c.Index = i
		out[i] = c
		completion += s.countChoice(c)
	}
	comp := &domain.Completion{
		ID:                "chatcmpl-" + randomID(),
		Model:             Model,
		Created:           s.cfg.Now(),
		SystemFingerprint: s.cfg.Fingerprint,
		Choices:           out,
	}
	if usage != nil {
		comp.Usage = *usage
	} else {
		comp.Usage = domain.Usage{PromptTokens: s.countPrompt(req.Messages), CompletionTokens: completion}
	}
	return comp, nil
}

// shape applies include_reasoning, continue_final_message, stop, the token
// limit and echo.
func (s *Service) shape(req *domain.ChatRequest, c domain.Choice) domain.Choice {
	prefill := prefillOf(req)
	content := c.Content
	switch {
	case !req.IncludeReasoning:
		content = think.Strip(content)
	case prefill.open:
		// The reply continues inside the reasoning block the prefill
		// opened: its reasoning goes on in that block, which it then
		// closes; no block is opened inside it.
		content = joinText(prefill.text, strings.TrimSpace(c.Reasoning))[len(prefill.text):] +
			"\n" + think.CloseTag + "\n\n" + strings.TrimLeft(think.Strip(content), "\n")
	case req.ContinueFinalMessage:
		// The reply continues the prefill's visible text: a reasoning
		// block would land in the middle of it, so there is none.
		content = joinText(prefill.text, think.Strip(content))[len(prefill.text):]
	default:
		if b := think.Block(c.Reasoning); b != "" {
			content = b + strings.TrimLeft(content, "\n")
		}
	}
	c.Reasoning = ""
	if len(c.ToolCalls) > 0 && c.FinishReason == "" {
		c.FinishReason = domain.FinishToolCalls
	}
	if c.FinishReason == "" {
		c.FinishReason = domain.FinishStop
	}
	if i, stop := firstStop(content, req.Stop); i >= 0 {
		if req.IncludeStopStr {
			i += len(stop)
		}
		content = content[:i]
		c.ToolCalls = nil
		c.FinishReason = domain.FinishStop
	}
	c.Content = content
	if req.MaxTokens != nil && s.countChoice(c) > *req.MaxTokens {
		c.Content = s.truncateTokens(content, *req.MaxTokens)
		c.ToolCalls = nil
		c.FinishReason = domain.FinishLength
	}
	if req.Echo && prefill.assistant {
		c.Content = prefill.text + c.Content
	}
	return c
}

// prefill is the last message when it is the assistant's: the text a reply
// continues (continue_final_message) and echo prepends.
type prefill struct {
	assistant bool   // the last message is the assistant's
	text      string // its text
	// open: the reply continues inside a reasoning block that the text
	// opened and did not close. Only with continue_final_message, or with
	// echo (which would otherwise nest the reply's block inside it).
	open bool
}

func prefillOf(req *domain.ChatRequest) prefill {
	if len(req.Messages) == 0 {
		return prefill{}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != domain.RoleAssistant {
		return prefill{}
	}
	p := prefill{assistant: true, text: last.Text()}
	p.open = (req.ContinueFinalMessage || req.Echo) && think.Open(p.text)
	return p
}

// joinText appends more to text, with a space between them when neither
// has whitespace at the junction (the engines return whole words; the
// upstream's reasoning comes trimmed).
func joinText(text, more string) string {
	if text == "" || more == "" {
		return text + more
	}
	a, _ := utf8.DecodeLastRuneInString(text)
	b, _ := utf8.DecodeRuneInString(more)
	if unicode.IsSpace(a) || unicode.IsSpace(b) || unicode.IsPunct(b) {
		return text + more
	}
	return text + " " + more
}

func firstStop(content string, stops []string) (int, string) {
	best, which := -1, ""
	for _, st := range stops {
		if st == "" {
			continue
		}
		if i := strings.Index(content, st); i >= 0 && (best < 0 || i < best) {
			best, which = i, st
		}
	}
	return best, which
}

func (s *Service) countChoice(c domain.Choice) int {
	n := s.cfg.Counter.CountTokens(c.Content)
	for _, tc := range c.ToolCalls {
		n += s.cfg.Counter.CountTokens(tc.Name) + s.cfg.Counter.CountTokens(tc.Arguments)
	}
	return n
}

func (s *Service) countPrompt(msgs []domain.Message) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Content {
			n += s.cfg.Counter.CountTokens(p.Text)
		}
		n += s.cfg.Counter.CountTokens(m.Refusal) + s.cfg.Counter.CountTokens(m.Reasoning)
		for _, tc := range m.ToolCalls {
			n += s.cfg.Counter.CountTokens(tc.Name) + s.cfg.Counter.CountTokens(tc.Arguments)
		}
	}
	return n
}

// truncateTokens returns the longest prefix of text, cut at a rune boundary,
// that has at most limit tokens.
func (s *Service) truncateTokens(text string, limit int) string {
	lo, hi := 0, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		for mid > 0 && !utf8.RuneStart(text[mid]) && mid < len(text) {
			mid--
		}
		if mid <= lo {
			break
		}
		if s.cfg.Counter.CountTokens(text[:mid]) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo > 0 && lo < len(text) && !utf8.RuneStart(text[lo]) {
		lo--
	}
	return text[:lo]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Fingerprint is the system_fingerprint of every reply, known before a turn
// runs (the first chunk of a stream carries it).
func (s *Service) Fingerprint() string { return s.cfg.Fingerprint }

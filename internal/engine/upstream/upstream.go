package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/think"
	"capsuled/internal/toolcall"
)

// Config configures the upstream engine.
type Config struct {
	URL     string        // base URL ending in /v1
	Model   string        // the upstream's model name
	Key     string        // optional bearer key
	Timeout time.Duration // per call; default 60s
	Client  *http.Client  // default: a client with no overall time-out (Timeout bounds each call)
}

// Engine is the upstream engine.
type Engine struct {
	cfg      Config
	endpoint string
}

// New checks the configuration and returns the engine.
func New(cfg Config) (*Engine, error) {
	if cfg.URL == "" || cfg.Model == "" {
		return nil, errors.New("upstream: --upstream-url and --upstream-model are required")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream: url %q: want http(s)://host[:port]/v1", cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
		}}
	}
	return &Engine{cfg: cfg, endpoint: strings.TrimRight(cfg.URL, "/") + "/chat/completions"}, nil
}

// Name is "upstream".
func (e *Engine) Name() string { return "upstream" }

// Check accepts every parameter: they all pass through.
func (e *Engine) Check(*domain.ChatRequest) error { return nil }

// wire types of the upstream reply (non-streamed and streamed).
type upMessage struct {
	Content          *string      `json:"content"`
	ReasoningContent *string      `json:"reasoning_content"`
	Reasoning        *string      `json:"reasoning"`
	ToolCalls        []upToolCall `json:"tool_calls"`
}

type upToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type upUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type upReply struct {
	Choices []struct {
		Index        int       `json:"index"`
		Message      upMessage `json:"message"`
		Delta        upMessage `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	} `json:"choices"`
	Usage *upUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Generate sends the request upstream and normalises the reply.
func (e *Engine) Generate(ctx context.Context, req *domain.ChatRequest) ([]domain.Choice, *domain.Usage, error) {
	body, err := e.body(req)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("upstream: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	if e.cfg.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+e.cfg.Key)
	}
	resp, err := e.cfg.Client.Do(hr)
	if err != nil {
		return nil, nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, statusError(resp)
	}
	var choices []domain.Choice
	var usage *domain.Usage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		choices, usage, err = readStream(resp.Body)
	} else {
		choices, usage, err = readJSON(resp.Body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, classify(ctx, ctx.Err())
		}
		var de *domain.Error
		if errors.As(err, &de) {
			return nil, nil, err
		}
		return nil, nil, garbage(err)
	}
	if len(choices) == 0 {
		return nil, nil, garbage(errors.New("no choices"))
	}
	return choices, usage, nil
}

// body is the client's request with the upstream model, without capsuled's
// extensions, asking for usage when streaming.
func (e *Engine) body(req *domain.ChatRequest) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if len(req.Raw) > 0 {
		if err := json.Unmarshal(req.Raw, &fields); err != nil {
			return nil, domain.Invalid("", "the request body is not a JSON object")
		}
	} else {
		msgs, _ := json.Marshal(messagesToWire(req.Messages))
		fields["messages"] = msgs
	}
	model, _ := json.Marshal(e.cfg.Model)
	fields["model"] = model
	delete(fields, "memory")
	if req.Stream {
		fields["stream"] = json.RawMessage("true")
		fields["stream_options"] = json.RawMessage(`{"include_usage":true}`)
	}
	return json.Marshal(fields)
}

func messagesToWire(msgs []domain.Message) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		w := map[string]any{"role": m.Role, "content": m.Text()}
		if m.ToolCallID != "" {
			w["tool_call_id"] = m.ToolCallID
		}
		if len(m.ToolCalls) > 0 {
			var calls []map[string]any
			for _, tc := range m.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
			}
			w["tool_calls"] = calls
		}
		out = append(out, w)
	}
	return out
}

const maxReply = 32 << 20

func readJSON(r io.Reader) ([]domain.Choice, *domain.Usage, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxReply))
	if err != nil {
		return nil, nil, err
	}
	var rep upReply
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, nil, fmt.Errorf("reply is not JSON: %w", err)
	}
	if rep.Error != nil {
		return nil, nil, &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: "the upstream engine failed: " + rep.Error.Message}
	}
	var out []domain.Choice
	for _, c := range rep.Choices {
		finish := ""
		if c.FinishReason != nil {
			finish = *c.FinishReason
		}
		out = append(out, normalise(c.Index, c.Message, finish))
	}
	return out, usageOf(rep.Usage), nil
}

// readStream accumulates an SSE reply.
func readStream(r io.Reader) ([]domain.Choice, *domain.Usage, error) {
	type acc struct {
		msg    upMessage
		calls  map[int]*upToolCall
		order  []int
		finish string
	}
	var (
		accs  = map[int]*acc{}
		order []int
		usage *upUsage
		done  bool
	)
	sc := bufio.NewScanner(io.LimitReader(r, maxReply))
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			done = true
			break
		}
		var ch upReply
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, nil, fmt.Errorf("stream event is not JSON: %w", err)
		}
		if ch.Error != nil {
			return nil, nil, &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: "the upstream engine failed: " + ch.Error.Message}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
		for _, c := range ch.Choices {
			a := accs[c.Index]
			if a == nil {
				a = &acc{calls: map[int]*upToolCall{}}
				accs[c.Index] = a
				order = append(order, c.Index)
			}
			appendPtr(&a.msg.Content, c.Delta.Content)
			appendPtr(&a.msg.ReasoningContent, c.Delta.ReasoningContent)
			appendPtr(&a.msg.Reasoning, c.Delta.Reasoning)
			for i, tc := range c.Delta.ToolCalls {
				idx := i
				if tc.Index != nil {
					idx = *tc.Index
				}
				t := a.calls[idx]
				if t == nil {
					t = &upToolCall{}
					a.calls[idx] = t
					a.order = append(a.order, idx)
				}
				t.ID += tc.ID
				if tc.Type != "" {
					t.Type = tc.Type
				}
				t.Function.Name += tc.Function.Name
				t.Function.Arguments += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				a.finish = *c.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if !done {
		return nil, nil, errors.New("the stream ended before [DONE]")
	}
	var out []domain.Choice
	for _, idx := range order {
		a := accs[idx]
		for _, ci := range a.order {
			a.msg.ToolCalls = append(a.msg.ToolCalls, *a.calls[ci])
		}
		out = append(out, normalise(idx, a.msg, a.finish))
	}
	return out, usageOf(usage), nil
}

func appendPtr(dst **string, add *string) {
	if add == nil {
		return
	}
	if *dst == nil {
		s := ""
		*dst = &s
	}
	**dst += *add
}

// normalise turns one upstream message into a choice: structured tool calls
// kept, Hermes calls parsed out of the content and the reasoning, reasoning
// moved to Reasoning.
func normalise(index int, m upMessage, finish string) domain.Choice {
	content := deref(m.Content)
	reasoning := deref(m.ReasoningContent)
	if reasoning == "" {
		reasoning = deref(m.Reasoning)
	}
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
	inContent, rest := toolcall.Parse(content)
	content = rest
	inReasoning, restR := toolcall.Parse(reasoning)
	reasoning = restR
	// inline <think> in content when the server has no reasoning parser
	if reasoning == "" {
		if r, rest, ok := think.Split(content); ok {
			content = rest
			more, r2 := toolcall.Parse(r)
			inReasoning = append(inReasoning, more...)
			reasoning = r2
		}
	}
	if len(calls) == 0 {
		calls = append(inContent, inReasoning...)
	}
	ch := domain.Choice{Index: index, Content: content, Reasoning: reasoning, FinishReason: finish}
	for i, c := range calls {
		id := ""
		if i < len(ids) {
			id = ids[i]
		}
		if id == "" {
			h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", i, c.Name, c.Arguments)))
			id = "call_" + hex.EncodeToString(h[:6])
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func usageOf(u *upUsage) *domain.Usage {
	if u == nil {
		return nil
	}
	return &domain.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
}

// classify maps a transport error.
func classify(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &domain.Error{Kind: domain.KindTimeout, Code: "upstream_timeout", Message: "the upstream engine did not answer in time", Err: err}
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, syscall.ECONNREFUSED) || isDNS(err) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return &domain.Error{Kind: domain.KindUnavailable, Code: "upstream_unavailable", Message: "the upstream engine cannot be reached", RetryAfter: 5, Err: err}
	default:
		return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: "the upstream engine reset the connection or failed", Err: err}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isDNS(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

func garbage(err error) error {
	return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_bad_reply", Message: "the upstream engine sent a reply that is not a chat completion", Err: err}
}

// statusError maps an upstream's error status.
func statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(b))
	var eb struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &eb) == nil {
		if eb.Error.Message != "" {
			msg = eb.Error.Message
		} else if eb.Message != "" {
			msg = eb.Message
		}
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return &domain.Error{Kind: domain.KindRateLimited, Code: "upstream_rate_limited", Message: "the upstream engine is rate limiting: " + msg, RetryAfter: 5}
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity:
		return &domain.Error{Kind: domain.KindInvalid, Code: "upstream_rejected", Message: "the upstream engine rejected the request: " + msg}
	case resp.StatusCode == http.StatusServiceUnavailable:
		return &domain.Error{Kind: domain.KindUnavailable, Code: "upstream_unavailable", Message: "the upstream engine is unavailable: " + msg, RetryAfter: 5}
	case resp.StatusCode == http.StatusGatewayTimeout:
		return &domain.Error{Kind: domain.KindTimeout, Code: "upstream_timeout", Message: "the upstream engine timed out: " + msg}
	default:
		return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: fmt.Sprintf("the upstream engine answered %d: %s", resp.StatusCode, msg)}
	}
}

package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"capsuled/gen"
	"capsuled/internal/domain"
)

// ChatRequestFromWire converts a chat-completion request body into a
// domain.ChatRequest, applying the defaults and the rules that hold for every
// engine and both chat operations: the tool-stub rules, tool_choice without a
// stub, max_tokens against max_completion_tokens, and continue_final_message
// against add_generation_prompt. raw is the body as received (it tells which
// fields were sent); nil re-encodes body. Rule violations are *domain.Error
// with a Param naming the field. It is a pure function.
func ChatRequestFromWire(body *gen.ChatCompletionRequest, raw []byte) (*domain.ChatRequest, error) {
	if body == nil {
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "missing_body", Message: "a request body is required"}
	}
	if len(raw) == 0 {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, domain.Invalid("", "the request cannot be encoded: %v", err)
		}
		raw = b
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "invalid_json", Message: "the request body is not a JSON object"}
	}
	req := &domain.ChatRequest{
		Model:               body.Model,
		Set:                 make(map[string]bool, len(fields)),
		Raw:                 json.RawMessage(raw),
		N:                   1,
		IncludeReasoning:    true,
		ParallelToolCalls:   true,
		IncludeUsage:        true,
		AddGenerationPrompt: true,
	}
	for k, v := range fields {
		if !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			req.Set[k] = true
		}
	}
	for i, m := range body.Messages {
		dm, err := messageFromWire(m)
		if err != nil {
			return nil, domain.Invalid(fmt.Sprintf("messages[%d]", i), "%v", err)
		}
		req.Messages = append(req.Messages, dm)
	}
	if len(req.Messages) == 0 {
		return nil, domain.Invalid("messages", "at least one message is required")
	}
	if err := toolsFromWire(fields["tools"], req); err != nil {
		return nil, err
	}
	if err := toolChoiceFromWire(body.ToolChoice, req); err != nil {
		return nil, err
	}

	switch {
	case body.MaxCompletionTokens != nil && body.MaxTokens != nil && *body.MaxCompletionTokens != *body.MaxTokens:
		return nil, domain.Invalid("max_tokens", "max_tokens is a deprecated alias of max_completion_tokens; give one of them, or the same value for both")
	case body.MaxCompletionTokens != nil:
		req.MaxTokens = body.MaxCompletionTokens
	case body.MaxTokens != nil:
		req.MaxTokens = body.MaxTokens
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return nil, domain.Invalid("max_completion_tokens", "must be at least 1")
	}
	if body.N != nil {
		req.N = *body.N
	}
	if req.N < 1 || req.N > 16 {
		return nil, domain.Invalid("n", "must be between 1 and 16")
	}
	req.Seed = body.Seed
	if body.Temperature != nil {
		t := float64(*body.Temperature)
		req.Temperature = &t
	}
	if body.TopP != nil {
		p := float64(*body.TopP)
		req.TopP = &p
	}
	if body.Stop != nil {
		stop, err := stopFromWire(body.Stop)
		if err != nil {
			return nil, err
		}
		req.Stop = stop
	}
	setBool := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	setBool(&req.Echo, body.Echo)
	setBool(&req.IncludeReasoning, body.IncludeReasoning)
	setBool(&req.ParallelToolCalls, body.ParallelToolCalls)
	setBool(&req.Stream, body.Stream)
	setBool(&req.AddGenerationPrompt, body.AddGenerationPrompt)
	setBool(&req.ContinueFinalMessage, body.ContinueFinalMessage)
	if o := body.StreamOptions; o != nil {
		setBool(&req.IncludeUsage, o.IncludeUsage)
		setBool(&req.ContinuousUsage, o.ContinuousUsageStats)
	}
	if req.ContinueFinalMessage {
		if req.AddGenerationPrompt {
			return nil, domain.Invalid("continue_final_message", "continue_final_message cannot be used together with add_generation_prompt (which defaults to true); set add_generation_prompt to false")
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role != domain.RoleAssistant {
			return nil, domain.Invalid("continue_final_message", "continue_final_message needs an assistant message last, to continue it")
		}
	}
	return req, nil
}

// wireMessage is any message variant, decoded loosely after validation.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID *string         `json:"tool_call_id"`
	ToolCalls  []gen.ToolCall  `json:"tool_calls"`
	Refusal    *string         `json:"refusal"`
	Reasoning  *string         `json:"reasoning"`
}

type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	Thinking string `json:"thinking"`
	Closed   *bool  `json:"closed"`
}

func messageFromWire(m gen.ChatMessage) (domain.Message, error) {
	raw, err := m.MarshalJSON()
	if err != nil {
		return domain.Message{}, fmt.Errorf("unreadable message: %w", err)
	}
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return domain.Message{}, fmt.Errorf("unreadable message: %w", err)
	}
	if w.Role == "" {
		return domain.Message{}, fmt.Errorf("role is required")
	}
	out := domain.Message{Role: w.Role, Name: w.Name}
	if w.ToolCallID != nil {
		out.ToolCallID = *w.ToolCallID
	}
	if w.Refusal != nil {
		out.Refusal = *w.Refusal
	}
	if w.Reasoning != nil {
		out.Reasoning = *w.Reasoning
	}
	for _, tc := range w.ToolCalls {
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		out.ToolCalls = append(out.ToolCalls, domain.ToolCall{ID: tc.Id, Type: typ, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	content := bytes.TrimSpace(w.Content)
	switch {
	case len(content) == 0 || bytes.Equal(content, []byte("null")):
	case content[0] == '"':
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return domain.Message{}, fmt.Errorf("content: %w", err)
		}
		out.Content = []domain.Part{{Type: domain.PartText, Text: s}}
	case content[0] == '[':
		var parts []wirePart
		if err := json.Unmarshal(content, &parts); err != nil {
			return domain.Message{}, fmt.Errorf("content: %w", err)
		}
		out.Content = make([]domain.Part, 0, len(parts))
		for _, p := range parts {
			switch p.Type {
			case domain.PartText:
				out.Content = append(out.Content, domain.Part{Type: p.Type, Text: p.Text})
			case domain.PartRefusal:
				out.Content = append(out.Content, domain.Part{Type: p.Type, Text: p.Refusal})
			case domain.PartThinking:
				out.Content = append(out.Content, domain.Part{Type: p.Type, Text: p.Thinking, Closed: p.Closed})
			default:
				return domain.Message{}, fmt.Errorf("content part type %q is not text, refusal or thinking", p.Type)
			}
		}
	default:
		return domain.Message{}, fmt.Errorf("content must be a string or an array of parts")
	}
	return out, nil
}

// toolsFromWire enforces the tool-stub rules on the raw tools field.
func toolsFromWire(raw json.RawMessage, req *domain.ChatRequest) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var stubs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &stubs); err != nil {
		return stubError("tools", "tools must be an array holding one tool stub")
	}
	switch {
	case len(stubs) == 0:
		return nil
	case len(stubs) > 1:
		return stubError("tools", fmt.Sprintf("pass at most one tool stub, not %d: one stub turns on tool calls for every tool the system prompt names", len(stubs)))
	}
	var fn map[string]json.RawMessage
	if err := json.Unmarshal(stubs[0]["function"], &fn); err != nil || fn == nil {
		return stubError("tools[0].function", "a tool stub needs a function with a name, such as {\"type\": \"function\", \"function\": {\"name\": \"dummy\"}}")
	}
	for _, k := range []string{"description", "parameters", "strict"} {
		if _, ok := fn[k]; ok {
			return stubError("tools[0].function."+k, "a tool stub is a name-only placeholder: remove "+k+"; svc-1 reads each tool's name and behaviour from the system prompt")
		}
	}
	req.ToolStub = true
	return nil
}

func stubError(param, msg string) error {
	return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_tool_stub", Param: param, Message: msg}
}

func toolChoiceFromWire(tc *gen.ChatCompletionRequest_ToolChoice, req *domain.ChatRequest) error {
	req.ToolChoice = domain.ToolChoice{Mode: domain.ToolChoiceNone}
	if req.ToolStub {
		req.ToolChoice.Mode = domain.ToolChoiceAuto
	}
	if tc == nil || !req.Set["tool_choice"] {
		return nil
	}
	raw, err := tc.MarshalJSON()
	if err != nil {
		return domain.Invalid("tool_choice", "unreadable tool_choice")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch mode := domain.ToolChoiceMode(s); mode {
		case domain.ToolChoiceNone, domain.ToolChoiceAuto, domain.ToolChoiceRequired:
			req.ToolChoice.Mode = mode
		default:
			return domain.Invalid("tool_choice", "tool_choice must be none, auto, required or a named function")
		}
	} else {
		var named gen.NamedToolChoice
		if err := json.Unmarshal(raw, &named); err != nil || strings.TrimSpace(named.Function.Name) == "" {
			return domain.Invalid("tool_choice", "a named tool_choice needs function.name")
		}
		req.ToolChoice = domain.ToolChoice{Mode: domain.ToolChoiceFunction, Function: named.Function.Name}
	}
	if !req.ToolStub && req.ToolChoice.Mode != domain.ToolChoiceNone {
		return domain.Invalid("tool_choice", "tool_choice %q needs the tool stub in tools (for example [{\"type\": \"function\", \"function\": {\"name\": \"dummy\"}}])", req.ToolChoice.Mode)
	}
	return nil
}

func stopFromWire(stop *gen.ChatCompletionRequest_Stop) ([]string, error) {
	raw, err := stop.MarshalJSON()
	if err != nil {
		return nil, domain.Invalid("stop", "unreadable stop")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, domain.Invalid("stop", "stop must be a string or an array of strings")
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// CompletionToWire renders a completion as the spec's ChatCompletion.
func CompletionToWire(c *domain.Completion) gen.ChatCompletion {
	out := gen.ChatCompletion{
		Id:      c.ID,
		Object:  gen.ChatCompletionObjectChatCompletion,
		Created: c.Created.Unix(),
		Model:   c.Model,
		Choices: make([]gen.ChatChoice, 0, len(c.Choices)),
		Usage:   usageToWire(c.Usage),
	}
	if c.SystemFingerprint != "" {
		fp := c.SystemFingerprint
		out.SystemFingerprint = &fp
	}
	for _, ch := range c.Choices {
		content := ch.Content
		msg := gen.AssistantReply{Role: gen.AssistantReplyRoleAssistant, Content: &content}
		if len(ch.ToolCalls) > 0 {
			calls := make([]gen.ToolCall, len(ch.ToolCalls))
			for i, tc := range ch.ToolCalls {
				calls[i].Id = tc.ID
				calls[i].Type = "function"
				calls[i].Function.Name = tc.Name
				calls[i].Function.Arguments = tc.Arguments
			}
			msg.ToolCalls = &calls
		}
		out.Choices = append(out.Choices, gen.ChatChoice{Index: ch.Index, Message: msg, FinishReason: gen.ChatChoiceFinishReason(ch.FinishReason)})
	}
	return out
}

func usageToWire(u domain.Usage) gen.Usage {
	return gen.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.Total()}
}

// ChunkOptions shape a stream.
type ChunkOptions struct {
	IncludeUsage    bool // a last chunk with usage and no choices
	ContinuousUsage bool // usage on every chunk, counted so far
	// SkipRole leaves out the first (role) chunk of each choice, when it was
	// already sent.
	SkipRole bool
}

// contentPiece is the size after which a content delta ends at the next space.
const contentPiece = 48

// CompletionChunks renders a completion as the chunks of a stream: per
// choice a role chunk, content deltas, one delta per tool call with its id
// and name then one with its arguments, a finish chunk; then the usage chunk.
// Accumulating the deltas gives back the completion's content and tool calls.
func CompletionChunks(c *domain.Completion, o ChunkOptions) []gen.ChatCompletionChunk {
	var out []gen.ChatCompletionChunk
	base := func() gen.ChatCompletionChunk {
		ch := gen.ChatCompletionChunk{Id: c.ID, Object: gen.ChatCompletionChunkObjectChatCompletionChunk, Created: c.Created.Unix(), Model: c.Model}
		if c.SystemFingerprint != "" {
			fp := c.SystemFingerprint
			ch.SystemFingerprint = &fp
		}
		return ch
	}
	add := func(index int, d gen.ChunkDelta, finish string) {
		ch := base()
		cc := gen.ChunkChoice{Index: index, Delta: d}
		if finish != "" {
			f := gen.ChunkChoiceFinishReason(finish)
			cc.FinishReason = &f
		}
		ch.Choices = []gen.ChunkChoice{cc}
		out = append(out, ch)
	}
	for _, choice := range c.Choices {
		if !o.SkipRole {
			out = append(out, RoleChunk(c, choice.Index))
		}
		for _, piece := range splitContent(choice.Content) {
			p := piece
			add(choice.Index, gen.ChunkDelta{Content: &p}, "")
		}
		for i, tc := range choice.ToolCalls {
			id, name, typ, empty := tc.ID, tc.Name, gen.ToolCallDeltaTypeFunction, ""
			head := gen.ToolCallDelta{Index: i, Id: &id, Type: &typ}
			head.Function = &struct {
				Arguments *string `json:"arguments,omitempty"`
				Name      *string `json:"name,omitempty"`
			}{Name: &name, Arguments: &empty}
			add(choice.Index, gen.ChunkDelta{ToolCalls: &[]gen.ToolCallDelta{head}}, "")
			args := tc.Arguments
			body := gen.ToolCallDelta{Index: i}
			body.Function = &struct {
				Arguments *string `json:"arguments,omitempty"`
				Name      *string `json:"name,omitempty"`
			}{Arguments: &args}
			add(choice.Index, gen.ChunkDelta{ToolCalls: &[]gen.ToolCallDelta{body}}, "")
		}
		add(choice.Index, gen.ChunkDelta{}, choice.FinishReason)
	}
	if o.ContinuousUsage {
		total, sent := 0, 0
		for _, ch := range out {
			total += chunkBytes(ch)
		}
		for i := range out {
			sent += chunkBytes(out[i])
			u := c.Usage
			if total > 0 {
				u.CompletionTokens = c.Usage.CompletionTokens * sent / total
			}
			w := usageToWire(u)
			out[i].Usage = &w
		}
	}
	if o.IncludeUsage {
		ch := base()
		ch.Choices = []gen.ChunkChoice{}
		u := usageToWire(c.Usage)
		ch.Usage = &u
		out = append(out, ch)
	}
	return out
}

// RoleChunk is the first chunk of a choice: the assistant role and empty content.
func RoleChunk(c *domain.Completion, index int) gen.ChatCompletionChunk {
	role, empty := gen.ChunkDeltaRoleAssistant, ""
	ch := gen.ChatCompletionChunk{Id: c.ID, Object: gen.ChatCompletionChunkObjectChatCompletionChunk, Created: c.Created.Unix(), Model: c.Model,
		Choices: []gen.ChunkChoice{{Index: index, Delta: gen.ChunkDelta{Role: &role, Content: &empty}}}}
	if c.SystemFingerprint != "" {
		fp := c.SystemFingerprint
		ch.SystemFingerprint = &fp
	}
	return ch
}

func chunkBytes(ch gen.ChatCompletionChunk) int {
	n := 0
	for _, c := range ch.Choices {
		if c.Delta.Content != nil {
			n += len(*c.Delta.Content)
		}
		if c.Delta.ToolCalls != nil {
			for _, t := range *c.Delta.ToolCalls {
				if t.Function != nil && t.Function.Arguments != nil {
					n += len(*t.Function.Arguments)
				}
				if t.Function != nil && t.Function.Name != nil {
					n += len(*t.Function.Name)
				}
			}
		}
	}
	return n
}

// splitContent cuts content into deltas that end after a space once they
// are contentPiece bytes long; joined, they give content back.
func splitContent(content string) []string {
	var out []string
	for len(content) > 0 {
		if len(content) <= contentPiece {
			out = append(out, content)
			break
		}
		i := strings.IndexAny(content[contentPiece:], " \n")
		if i < 0 {
			out = append(out, content)
			break
		}
		cut := contentPiece + i + 1
		out = append(out, content[:cut])
		content = content[cut:]
	}
	return out
}

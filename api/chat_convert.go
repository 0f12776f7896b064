package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"capsuled/gen"
	"capsuled/internal/domain"
)

// consumedFields are the request fields capsuled consumes or rewrites; every
// other field is forwarded to an upstream model server as sent
// (domain.ChatRequest.Passthrough).
var consumedFields = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "echo": true, "memory": true,
}

// ChatRequestFromWire converts a chat-completion request body, as the spec's
// validation decoded it (a JSON object with json.Number numbers), into a
// domain.ChatRequest, applying the defaults and the rules that hold for every
// engine and both chat operations: the tool-stub rules, tool_choice without a
// stub, max_tokens against max_completion_tokens, and continue_final_message
// against add_generation_prompt. It is the one conversion of both chat
// operations, and a pure function. Rule violations are *domain.Error with a
// Param naming the field.
func ChatRequestFromWire(body any) (*domain.ChatRequest, error) {
	fields, ok := body.(map[string]any)
	if !ok {
		if body == nil {
			return nil, &domain.Error{Kind: domain.KindInvalid, Code: "missing_body", Message: "a request body is required"}
		}
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "invalid_json", Message: "the request body is not a JSON object"}
	}
	f := wireFields(fields)
	req := &domain.ChatRequest{
		N:                   1,
		IncludeReasoning:    true,
		ParallelToolCalls:   true,
		IncludeUsage:        true,
		AddGenerationPrompt: true,
		Passthrough:         make(map[string]any, len(fields)),
	}
	for k, v := range fields {
		if v != nil && !consumedFields[k] {
			req.Passthrough[k] = v
		}
	}
	var err error
	if req.Model, err = f.str("model"); err != nil {
		return nil, err
	}
	msgs, _ := fields["messages"].([]any)
	for i, m := range msgs {
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
	if err := toolChoiceFromWire(fields["tool_choice"], req); err != nil {
		return nil, err
	}

	maxCompletion, err := f.int("max_completion_tokens")
	if err != nil {
		return nil, err
	}
	maxTokens, err := f.int("max_tokens")
	if err != nil {
		return nil, err
	}
	switch {
	case maxCompletion != nil && maxTokens != nil && *maxCompletion != *maxTokens:
		return nil, domain.Invalid("max_tokens", "max_tokens is a deprecated alias of max_completion_tokens; give one of them, or the same value for both")
	case maxCompletion != nil:
		req.MaxTokens = maxCompletion
	case maxTokens != nil:
		req.MaxTokens = maxTokens
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return nil, domain.Invalid("max_completion_tokens", "must be at least 1")
	}
	n, err := f.int("n")
	if err != nil {
		return nil, err
	}
	if n != nil {
		req.N = *n
	}
	if req.N < 1 || req.N > 16 {
		return nil, domain.Invalid("n", "must be between 1 and 16")
	}
	if seed, err := f.int("seed"); err != nil {
		return nil, err
	} else if seed != nil {
		s := int64(*seed)
		req.Seed = &s
	}
	if req.Temperature, err = f.float("temperature"); err != nil {
		return nil, err
	}
	if req.TopP, err = f.float("top_p"); err != nil {
		return nil, err
	}
	if req.Stop, err = stopFromWire(fields["stop"]); err != nil {
		return nil, err
	}
	for _, b := range []struct {
		dst  *bool
		name string
	}{
		{&req.Echo, "echo"}, {&req.IncludeReasoning, "include_reasoning"}, {&req.ParallelToolCalls, "parallel_tool_calls"},
		{&req.Stream, "stream"}, {&req.AddGenerationPrompt, "add_generation_prompt"},
		{&req.ContinueFinalMessage, "continue_final_message"}, {&req.IncludeStopStr, "include_stop_str_in_output"},
	} {
		if err := f.setBool(b.dst, b.name); err != nil {
			return nil, err
		}
	}
	if o, ok := fields["stream_options"].(map[string]any); ok {
		so := wireFields(o)
		if err := so.setBool(&req.IncludeUsage, "include_usage"); err != nil {
			return nil, err
		}
		if err := so.setBool(&req.ContinuousUsage, "continuous_usage_stats"); err != nil {
			return nil, err
		}
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

// wireFields reads the typed fields of a decoded JSON object; an absent or
// null field is left unset, a field of the wrong type is a 400 naming it.
type wireFields map[string]any

func (f wireFields) str(k string) (string, error) {
	switch v := f[k].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", domain.Invalid(k, "must be a string")
	}
}

func (f wireFields) setBool(dst *bool, k string) error {
	switch v := f[k].(type) {
	case nil:
		return nil
	case bool:
		*dst = v
		return nil
	default:
		return domain.Invalid(k, "must be a boolean")
	}
}

func (f wireFields) int(k string) (*int, error) {
	if f[k] == nil {
		return nil, nil
	}
	n, ok := f[k].(json.Number)
	if !ok {
		return nil, domain.Invalid(k, "must be an integer")
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || int64(int(i)) != i {
		return nil, domain.Invalid(k, "must be an integer")
	}
	v := int(i)
	return &v, nil
}

func (f wireFields) float(k string) (*float64, error) {
	if f[k] == nil {
		return nil, nil
	}
	n, ok := f[k].(json.Number)
	if !ok {
		return nil, domain.Invalid(k, "must be a number")
	}
	v, err := n.Float64()
	if err != nil {
		return nil, domain.Invalid(k, "must be a number")
	}
	return &v, nil
}

// messageFromWire converts one message, whatever its variant.
func messageFromWire(v any) (domain.Message, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return domain.Message{}, fmt.Errorf("a message must be an object")
	}
	f := wireFields(m)
	var out domain.Message
	for _, s := range []struct {
		dst  *string
		name string
	}{{&out.Role, "role"}, {&out.Name, "name"}, {&out.ToolCallID, "tool_call_id"}, {&out.Refusal, "refusal"}, {&out.Reasoning, "reasoning"}} {
		var err error
		if *s.dst, err = f.str(s.name); err != nil {
			return domain.Message{}, fmt.Errorf("%s must be a string", s.name)
		}
	}
	if out.Role == "" {
		return domain.Message{}, fmt.Errorf("role is required")
	}
	if m["tool_calls"] != nil {
		calls, ok := m["tool_calls"].([]any)
		if !ok {
			return domain.Message{}, fmt.Errorf("tool_calls must be an array")
		}
		for _, c := range calls {
			tc, err := toolCallFromWire(c)
			if err != nil {
				return domain.Message{}, err
			}
			out.ToolCalls = append(out.ToolCalls, tc)
		}
	}
	switch content := m["content"].(type) {
	case nil:
	case string:
		out.Content = []domain.Part{{Type: domain.PartText, Text: content}}
	case []any:
		out.Content = make([]domain.Part, 0, len(content))
		for _, p := range content {
			part, err := partFromWire(p)
			if err != nil {
				return domain.Message{}, err
			}
			out.Content = append(out.Content, part)
		}
	default:
		return domain.Message{}, fmt.Errorf("content must be a string or an array of parts")
	}
	return out, nil
}

func toolCallFromWire(v any) (domain.ToolCall, error) {
	c, ok := v.(map[string]any)
	if !ok {
		return domain.ToolCall{}, fmt.Errorf("a tool call must be an object")
	}
	fn, _ := c["function"].(map[string]any)
	id, err1 := wireFields(c).str("id")
	typ, err2 := wireFields(c).str("type")
	name, err3 := wireFields(fn).str("name")
	args, err4 := wireFields(fn).str("arguments")
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return domain.ToolCall{}, fmt.Errorf("a tool call has an id, a type and a function with a name and arguments, all strings")
	}
	if typ == "" {
		typ = "function"
	}
	return domain.ToolCall{ID: id, Type: typ, Name: name, Arguments: args}, nil
}

func partFromWire(v any) (domain.Part, error) {
	p, ok := v.(map[string]any)
	if !ok {
		return domain.Part{}, fmt.Errorf("a content part must be an object")
	}
	f := wireFields(p)
	typ, err := f.str("type")
	if err != nil {
		return domain.Part{}, fmt.Errorf("content part type must be a string")
	}
	out := domain.Part{Type: typ}
	switch typ {
	case domain.PartText:
		out.Text, err = f.str("text")
	case domain.PartRefusal:
		out.Text, err = f.str("refusal")
	case domain.PartThinking:
		out.Text, err = f.str("thinking")
		if err == nil && p["closed"] != nil {
			var closed bool
			if err = f.setBool(&closed, "closed"); err == nil {
				out.Closed = &closed
			}
		}
	default:
		return domain.Part{}, fmt.Errorf("content part type %q is not text, refusal or thinking", typ)
	}
	if err != nil {
		return domain.Part{}, fmt.Errorf("content part: %v", err)
	}
	return out, nil
}

// toolsFromWire reads the tools field: one name-only stub, which turns on
// tool calls for the tools the system prompt names, or the client's full
// definitions (several tools, or one with a description, parameters or
// strict), which svc-1 maps its four roles to. Every tool needs a function
// with a name, and names are unique.
func toolsFromWire(v any, req *domain.ChatRequest) error {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return stubError("tools", "tools must be an array of function tools: one stub such as {\"type\": \"function\", \"function\": {\"name\": \"dummy\"}}, or full definitions")
	}
	names := map[string]bool{}
	for i, t := range list {
		tool, err := toolFromWire(t)
		if err != nil || tool.Name == "" {
			return stubError(fmt.Sprintf("tools[%d].function", i), "each tool needs a function with a name, such as {\"type\": \"function\", \"function\": {\"name\": \"dummy\"}}")
		}
		if names[tool.Name] {
			return stubError(fmt.Sprintf("tools[%d].function.name", i), fmt.Sprintf("tool names must be unique: %q comes twice", tool.Name))
		}
		names[tool.Name] = true
		req.Tools = append(req.Tools, tool)
	}
	req.ToolStub = len(list) > 0
	return nil
}

// toolFromWire reads one tool definition with everything it declares.
func toolFromWire(v any) (domain.Tool, error) {
	t, ok := v.(map[string]any)
	if !ok {
		return domain.Tool{}, errors.New("not an object")
	}
	fn, ok := t["function"].(map[string]any)
	if !ok {
		return domain.Tool{}, errors.New("no function")
	}
	f := wireFields(fn)
	typ, err1 := wireFields(t).str("type")
	name, err2 := f.str("name")
	desc, err3 := f.str("description")
	if err := errors.Join(err1, err2, err3); err != nil {
		return domain.Tool{}, err
	}
	if typ == "" {
		typ = "function"
	}
	out := domain.Tool{Type: typ, Name: name, Description: desc}
	if fn["parameters"] != nil {
		if out.Parameters, ok = fn["parameters"].(map[string]any); !ok {
			return domain.Tool{}, errors.New("parameters must be an object")
		}
	}
	if fn["strict"] != nil {
		var strict bool
		if err := f.setBool(&strict, "strict"); err != nil {
			return domain.Tool{}, err
		}
		out.Strict = &strict
	}
	return out, nil
}

func stubError(param, msg string) error {
	return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_tool_stub", Param: param, Message: msg}
}

func toolChoiceFromWire(v any, req *domain.ChatRequest) error {
	req.ToolChoice = domain.ToolChoice{Mode: domain.ToolChoiceNone}
	if req.ToolStub {
		req.ToolChoice.Mode = domain.ToolChoiceAuto
	}
	switch tc := v.(type) {
	case nil:
		return nil
	case string:
		switch mode := domain.ToolChoiceMode(tc); mode {
		case domain.ToolChoiceNone, domain.ToolChoiceAuto, domain.ToolChoiceRequired:
			req.ToolChoice.Mode = mode
		default:
			return domain.Invalid("tool_choice", "tool_choice must be none, auto, required or a named function")
		}
	case map[string]any:
		fn, _ := tc["function"].(map[string]any)
		name, _ := fn["name"].(string)
		if strings.TrimSpace(name) == "" {
			return domain.Invalid("tool_choice", "a named tool_choice needs function.name")
		}
		req.ToolChoice = domain.ToolChoice{Mode: domain.ToolChoiceFunction, Function: name}
	default:
		return domain.Invalid("tool_choice", "tool_choice must be none, auto, required or a named function")
	}
	if !req.ToolStub && req.ToolChoice.Mode != domain.ToolChoiceNone {
		return domain.Invalid("tool_choice", "tool_choice %q needs the tool stub in tools (for example [{\"type\": \"function\", \"function\": {\"name\": \"dummy\"}}])", req.ToolChoice.Mode)
	}
	return nil
}

func stopFromWire(v any) ([]string, error) {
	switch stop := v.(type) {
	case nil:
		return nil, nil
	case string:
		if stop == "" {
			return nil, nil
		}
		return []string{stop}, nil
	case []any:
		var out []string
		for _, s := range stop {
			str, ok := s.(string)
			if !ok {
				return nil, domain.Invalid("stop", "stop must be a string or an array of strings")
			}
			if str != "" {
				out = append(out, str)
			}
		}
		return out, nil
	default:
		return nil, domain.Invalid("stop", "stop must be a string or an array of strings")
	}
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

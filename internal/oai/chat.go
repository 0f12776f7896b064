package oai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ToolCall is a tool call of a reply or of a stream delta (which carries
// Index and pieces of the name and arguments).
type ToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Message is an assistant message of a reply, or a stream delta. Reasoning
// comes as reasoning_content (vLLM's reasoning parsers, llama-server) or
// reasoning (some other servers).
type Message struct {
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content"`
	Reasoning        *string    `json:"reasoning"`
	ToolCalls        []ToolCall `json:"tool_calls"`
}

// Text is the content, "" when null.
func (m Message) Text() string { return deref(m.Content) }

// ReasoningText is the reasoning from either field.
func (m Message) ReasoningText() string {
	if r := deref(m.ReasoningContent); r != "" {
		return r
	}
	return deref(m.Reasoning)
}

// Usage is a reply's token counts.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// chatReply is a chat completion or one chunk of a streamed one.
type chatReply struct {
	ID                string `json:"id"`
	Created           int64  `json:"created"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index        int     `json:"index"`
		Message      Message `json:"message"`
		Delta        Message `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// Choice is one choice of a chat completion, a streamed one accumulated.
type Choice struct {
	Index        int
	Message      Message
	FinishReason string
}

// Completion is a chat completion.
type Completion struct {
	ID                string
	Created           int64
	SystemFingerprint string
	Choices           []Choice // in the order the server first sent them
	Usage             *Usage
}

// Chat posts a chat completions request (body is marshalled as is; with
// stream true it should ask for a stream) and returns the completion; a
// streamed reply is accumulated: content and reasoning concatenated, tool
// calls joined by index. A reply without choices is an upstream_bad_reply.
func (c *Client) Chat(ctx context.Context, body any, stream bool) (*Completion, error) {
	var out *Completion
	var err error
	if stream {
		acc := NewAccumulator()
		err = c.PostStream(ctx, "/chat/completions", body, func(data []byte) error { return c.addChunk(acc, data) })
		out = acc.Completion()
	} else {
		var r chatReply
		if err = c.PostJSON(ctx, "/chat/completions", body, &r); err == nil {
			err = c.replyError(r.Error)
		}
		if err == nil {
			out = &Completion{ID: r.ID, Created: r.Created, SystemFingerprint: r.SystemFingerprint, Usage: r.Usage}
			for _, ch := range r.Choices {
				out.Choices = append(out.Choices, Choice{Index: ch.Index, Message: ch.Message, FinishReason: deref(ch.FinishReason)})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if len(out.Choices) == 0 {
		return nil, c.BadReply(errors.New("the reply has no choices"))
	}
	return out, nil
}

func (c *Client) addChunk(acc *Accumulator, data []byte) error {
	var r chatReply
	if err := json.Unmarshal(data, &r); err != nil {
		return c.BadReply(fmt.Errorf("stream event is not JSON: %w", err))
	}
	if err := c.replyError(r.Error); err != nil {
		return err
	}
	acc.add(&r)
	return nil
}

// replyError is the error of an {"error": …} member of a 200 reply.
func (c *Client) replyError(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return c.ErrorEvent(ErrorMessage([]byte(`{"error":` + string(raw) + `}`)))
}

// Accumulator joins the chunks of a streamed chat completion.
type Accumulator struct {
	c     Completion
	index map[int]int // choice index → position in c.Choices
	calls map[int]map[int]int
}

// NewAccumulator returns an empty Accumulator.
func NewAccumulator() *Accumulator {
	return &Accumulator{index: map[int]int{}, calls: map[int]map[int]int{}}
}

// Add adds one chunk, the data of one stream event.
func (a *Accumulator) Add(data []byte) error {
	var r chatReply
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	a.add(&r)
	return nil
}

func (a *Accumulator) add(r *chatReply) {
	if a.c.ID == "" {
		a.c.ID, a.c.Created, a.c.SystemFingerprint = r.ID, r.Created, r.SystemFingerprint
	}
	if r.Usage != nil {
		a.c.Usage = r.Usage
	}
	for _, ch := range r.Choices {
		pos, ok := a.index[ch.Index]
		if !ok {
			pos = len(a.c.Choices)
			a.index[ch.Index] = pos
			a.calls[ch.Index] = map[int]int{}
			a.c.Choices = append(a.c.Choices, Choice{Index: ch.Index})
		}
		dst := &a.c.Choices[pos]
		// A server that ignored "stream" sent a whole message.
		for _, m := range []Message{ch.Message, ch.Delta} {
			appendPtr(&dst.Message.Content, m.Content)
			appendPtr(&dst.Message.ReasoningContent, m.ReasoningContent)
			appendPtr(&dst.Message.Reasoning, m.Reasoning)
			for i, tc := range m.ToolCalls {
				idx := i
				if tc.Index != nil {
					idx = *tc.Index
				}
				at, ok := a.calls[ch.Index][idx]
				if !ok {
					at = len(dst.Message.ToolCalls)
					a.calls[ch.Index][idx] = at
					dst.Message.ToolCalls = append(dst.Message.ToolCalls, ToolCall{})
				}
				t := &dst.Message.ToolCalls[at]
				t.ID += tc.ID
				if tc.Type != "" {
					t.Type = tc.Type
				}
				t.Function.Name += tc.Function.Name
				t.Function.Arguments += tc.Function.Arguments
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			dst.FinishReason = *ch.FinishReason
		}
	}
}

// Completion is what was accumulated.
func (a *Accumulator) Completion() *Completion {
	out := a.c
	return &out
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package domain

import (
	"strings"
	"time"
)

// Roles of the standard message variants. Any other role is a custom message.
const (
	RoleDeveloper = "developer"
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part types inside message content.
const (
	PartText     = "text"
	PartRefusal  = "refusal"
	PartThinking = "thinking"
)

// A Message is one turn of a conversation, whatever its variant.
type Message struct {
	Role       string
	Content    []Part // nil when the content was absent or null
	Name       string
	ToolCallID string
	ToolCalls  []ToolCall
	Refusal    string
	Reasoning  string
}

// A Part is one piece of message content. A string content is one text part.
type Part struct {
	Type   string // text, refusal or thinking
	Text   string // the text, refusal or thinking
	Closed *bool  // thinking parts only
}

// Text returns the concatenated text parts of m's content.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TextMessage returns a message with one text part.
func TextMessage(role, text string) Message {
	return Message{Role: role, Content: []Part{{Type: PartText, Text: text}}}
}

// A ToolCall is a function call made by the model.
type ToolCall struct {
	ID        string
	Type      string // "function"
	Name      string
	Arguments string // a JSON object, as text
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// The tool-choice modes.
const (
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceRequired ToolChoiceMode = "required"
	ToolChoiceFunction ToolChoiceMode = "function" // call the function named in ToolChoice.Function
)

// ToolChoice is the resolved tool_choice of a request.
type ToolChoice struct {
	Mode     ToolChoiceMode
	Function string
}

// A Tool is one tool definition of a request's tools, as the client sent it.
type Tool struct {
	Type        string // "function"
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, as decoded JSON
	// (nil when absent).
	Parameters map[string]any
	Strict     *bool
}

// A ChatRequest is one chat-completion request after validation and defaults,
// decoded once by the HTTP layer. The typed fields are what capsuled reads;
// Passthrough carries the request to an upstream model server.
type ChatRequest struct {
	Model    string
	Messages []Message
	// Tools are the request's tool definitions, in order.
	Tools []Tool
	// ToolStub is true when the request carried the single tool stub that
	// turns on tool calls for every tool named in the system prompt.
	ToolStub   bool
	ToolChoice ToolChoice

	MaxTokens         *int // max_completion_tokens, or the deprecated max_tokens
	N                 int
	Seed              *int64
	Stop              []string
	IncludeStopStr    bool // include_stop_str_in_output
	Temperature       *float64
	TopP              *float64
	Echo              bool
	IncludeReasoning  bool
	ParallelToolCalls bool
	Stream            bool
	IncludeUsage      bool // stream_options.include_usage (default true)
	ContinuousUsage   bool // stream_options.continuous_usage_stats

	AddGenerationPrompt  bool
	ContinueFinalMessage bool

	// Passthrough holds the request fields an upstream model server receives
	// as the client sent them, by wire name: every field with a non-null
	// value except those capsuled consumes or rewrites (model, messages,
	// stream, stream_options, echo, memory). Typed fields above that are also
	// forwarded (tools, temperature, continue_final_message, …)
	// are read-only views of their entry here. Values are decoded JSON:
	// bool, string, json.Number, []any or map[string]any. Engines that cannot
	// honour an entry refuse it in their Check.
	Passthrough map[string]any
}

// Finish reasons.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// A Choice is one generated assistant message.
type Choice struct {
	Index        int
	Content      string // visible text; starts with a <think> block when reasoning is included
	Reasoning    string // reasoning, when the engine returns it apart from Content
	ToolCalls    []ToolCall
	FinishReason string
}

// Usage counts tokens of a completion.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// A Completion is the reply to a ChatRequest.
type Completion struct {
	ID                string
	Model             string
	Created           time.Time
	SystemFingerprint string
	Choices           []Choice
	Usage             Usage
	// Extensions are extra top-level response fields (for example the memory
	// ids read and written by the memory operation).
	Extensions map[string]any
}

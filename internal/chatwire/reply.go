package chatwire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"capsuled/internal/domain"
	"capsuled/internal/oai"
	"capsuled/internal/reasoning"
	"capsuled/internal/toolcall"
)

// Parsers read what a server left in a reply's text: tool calls and
// reasoning. A nil parser reads nothing from the text (the server's
// structured fields are still read).
type Parsers struct {
	Tools     *toolcall.Parser
	Reasoning *reasoning.Parser
}

// Choice turns one upstream message into a choice: the server's structured
// tool calls kept; else the calls the tool-call parser finds in the content
// and in the reasoning (a model may write its calls while reasoning: they
// are calls all the same, after those of the content); reasoning from the
// server's field, else split out of the content by the reasoning parser.
// The finish reason is tool_calls when there are calls, else the server's
// length, else stop. It is the one reading of upstream replies of both chat
// operations' upstream generators.
func Choice(index int, m oai.Message, finish string, p Parsers) domain.Choice {
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
	if reasoningText == "" && p.Reasoning != nil {
		reasoningText, content = p.Reasoning.Split(content)
	}
	if p.Tools != nil {
		inContent, rest := p.Tools.Parse(content)
		inReasoning, restReasoning := p.Tools.Parse(reasoningText)
		content, reasoningText = rest, restReasoning
		if len(calls) == 0 {
			calls = append(inContent, inReasoning...)
		}
	}
	ch := domain.Choice{Index: index, Content: content, Reasoning: reasoningText, FinishReason: finish}
	for i, c := range calls {
		id := ""
		if i < len(ids) {
			id = ids[i]
		}
		if id == "" {
			id = CallID(i, c.Name, c.Arguments)
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

// CallID is the id of a call the server sent without one: derived from the
// call, so the same reply always gets the same ids.
func CallID(i int, name, args string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", i, name, args)))
	return "call_" + hex.EncodeToString(h[:6])
}

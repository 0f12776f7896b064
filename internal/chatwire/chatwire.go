// Package chatwire renders a domain chat request as the body of a request to
// an OpenAI-compatible chat completions server (vLLM, llama.cpp, Ollama), and
// reads the server's reply back into a domain choice. It is the one
// rendering and reading used by both chat operations' upstream generators
// (the svc-1 upstream engine and memory chat), so both forward the same
// fields (the request's pass-through fields as the client sent them, the
// messages, the upstream's model name and the stream setting) and return
// the server's tool calls the same way.
package chatwire

import "capsuled/internal/domain"

// Body is the upstream request body for req, with model and msgs in place of
// the request's own (the upstream's model name; the prompt the operation
// built). When stream is set it asks for a stream that ends with usage.
func Body(model string, msgs []domain.Message, req *domain.ChatRequest, stream bool) map[string]any {
	body := make(map[string]any, len(req.Passthrough)+4)
	for k, v := range req.Passthrough {
		body[k] = v
	}
	body["model"] = model
	body["messages"] = Messages(msgs)
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	return body
}

// Messages renders messages as the wire's message objects. A content of one
// text part is a string; other contents are arrays of parts.
func Messages(msgs []domain.Message) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		w := map[string]any{"role": m.Role}
		switch {
		case m.Content == nil:
			if m.Role == domain.RoleAssistant {
				w["content"] = nil
			}
		case len(m.Content) == 1 && m.Content[0].Type == domain.PartText:
			w["content"] = m.Content[0].Text
		default:
			parts := make([]map[string]any, 0, len(m.Content))
			for _, p := range m.Content {
				switch p.Type {
				case domain.PartRefusal:
					parts = append(parts, map[string]any{"type": p.Type, "refusal": p.Text})
				case domain.PartThinking:
					part := map[string]any{"type": p.Type, "thinking": p.Text}
					if p.Closed != nil {
						part["closed"] = *p.Closed
					}
					parts = append(parts, part)
				default:
					parts = append(parts, map[string]any{"type": domain.PartText, "text": p.Text})
				}
			}
			w["content"] = parts
		}
		if m.Name != "" {
			w["name"] = m.Name
		}
		if m.ToolCallID != "" {
			w["tool_call_id"] = m.ToolCallID
		}
		if m.Refusal != "" {
			w["refusal"] = m.Refusal
		}
		if m.Reasoning != "" {
			w["reasoning"] = m.Reasoning
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]map[string]any, 0, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				typ := tc.Type
				if typ == "" {
					typ = "function"
				}
				calls = append(calls, map[string]any{"id": tc.ID, "type": typ, "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
			}
			w["tool_calls"] = calls
		}
		out = append(out, w)
	}
	return out
}

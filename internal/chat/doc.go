// Package chat is the serving logic of svc-1's chat completions: it checks the
// request rules that depend on the serving engine (the model id, parameters
// the engine cannot honour), runs the engine, and applies the parameters that
// shape every engine's reply the same way: n, stop, echo, include_reasoning,
// continue_final_message, the completion-token limit (finish reason "length")
// and usage counting.
//
// With continue_final_message the reply continues the last assistant message
// (a prefill): when that message opened a <think> block and left it open, the
// reply's reasoning goes on inside it and then closes it; otherwise the reply
// has no reasoning block, since one would land in the middle of the continued
// text. echo prepends the last assistant message to the reply; a reply after
// an open block continues it, as above, so blocks never nest.
//
// Engines (the built-in policy in internal/engine/builtin, an upstream
// OpenAI-compatible server in internal/engine/upstream) implement Engine.
// Streaming is rendered by the HTTP layer from the Completion, so streamed and
// non-streamed replies always carry the same content and tool calls.
package chat

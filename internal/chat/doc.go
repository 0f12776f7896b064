// Package chat is the serving logic of svc-1's chat completions: it checks the
// request rules that depend on the serving engine (the model id, parameters
// the engine cannot honour), runs the engine, and applies the parameters that
// shape every engine's reply the same way: n, stop, echo, include_reasoning,
// the completion-token limit (finish reason "length") and usage counting.
//
// Engines (the built-in policy in internal/engine/builtin, an upstream
// OpenAI-compatible server in internal/engine/upstream) implement Engine.
// Streaming is rendered by the HTTP layer from the Completion, so streamed and
// non-streamed replies always carry the same content and tool calls.
package chat

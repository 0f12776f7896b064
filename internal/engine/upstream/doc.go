// Package upstream serves svc-1 with an OpenAI-compatible chat-completions
// server (vLLM first; llama.cpp server, Ollama and SGLang speak the same
// protocol).
//
// Every request parameter passes through unchanged, except model (replaced by
// the configured upstream model) and capsuled's own extension fields. A
// streamed request is streamed upstream too and its deltas accumulated. The
// reply is normalised across engines: structured tool_calls are kept;
// Hermes-style <tool_call>{…}</tool_call> text in the content or in the
// reasoning becomes structured tool calls; reasoning returned in a separate
// field (reasoning_content, as vLLM's reasoning parsers give it, or
// reasoning) becomes the choice's Reasoning, which the chat service puts back
// as a <think> block when include_reasoning is true.
//
// Failures map to the spec's statuses: a time-out is 504, an upstream that
// cannot be reached 503, a refused, reset or garbled reply 502; a 4xx of the
// upstream about the request is the client's 400 (429 stays 429). Every call
// is bounded by the configured time-out, so nothing hangs.
package upstream

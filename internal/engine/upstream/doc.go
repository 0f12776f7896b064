// Package upstream serves svc-1 with an OpenAI-compatible chat-completions
// server (vLLM first; llama.cpp server, Ollama and SGLang speak the same
// protocol).
//
// The upstream request is rendered by internal/chatwire, as memory chat's is:
// every request parameter passes through as the client sent it
// (domain.ChatRequest.Passthrough: vLLM's sampling extras, tools,
// continue_final_message and add_generation_prompt at the top level, as vLLM
// expects them), with the configured upstream model, the messages, and
// without capsuled's extension fields or echo (the chat service applies echo
// to every engine's reply). A streamed request is streamed upstream too and
// its deltas accumulated. The
// reply is normalised across engines: structured tool_calls are kept;
// reasoning returned in a separate field (reasoning_content, as vLLM's
// reasoning parsers give it, or reasoning) becomes the choice's Reasoning,
// else the configured reasoning parser (internal/reasoning; vLLM's names,
// default qwen3) splits it out of the content; tool calls written as text in
// the content or in the reasoning are read by the configured tool-call
// parser (internal/toolcall; vLLM's names, default hermes). The chat service
// puts the reasoning back as a <think> block when include_reasoning is true.
//
// Requests go through capsuled's one client of OpenAI-compatible servers,
// internal/oai: its one table maps the upstream's failures (429 with its
// Retry-After, 400, 401/403, 404, 5xx, time-outs, truncated streams) to
// capsuled's errors, and every call is bounded by the configured time-out,
// so nothing hangs.
package upstream

// Package engine holds the engines that serve svc-1 behind the chat.Engine
// interface (declared by internal/chat, the consumer): builtin, a
// deterministic retrieval policy that speaks the tool-calling protocol, and
// upstream, a client of an OpenAI-compatible server (vLLM, llama.cpp,
// Ollama, SGLang) that normalises tool calls and reasoning across them.
package engine

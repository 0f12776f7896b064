// Package agent runs svc-1's documented client loop: send the system prompt
// (naming the four tools) and the question with one tool stub, run every tool
// call of the reply against a search Backend, append the assistant message
// and one tool message per call, and ask again until the model calls
// report_helpful_ids (or a turn limit is reached).
//
// The Model is anything that answers one turn: the built-in engine in
// process (InProcess), or svc-1 over HTTP (the CLI's OpenAI-SDK client). The
// Backend maps search to a semantic or hybrid search, text_search to a
// keyword search and read to a document's full text.
package agent

// Package memory is the memory chat service: it remembers conversations in
// namespaces and brings back what matters for the next turn.
//
// A memory chat turn (Service.Chat) does five things:
//
//  1. Selection: hybrid retrieval over the namespace's live memories (not
//     expired, not superseded) for the latest user message in the context of
//     the recent turns. BM25 (through the Store) and, when an Embedder is
//     configured, dense cosine similarity are fused by the capsule
//     retrieval's formula, shared on purpose (internal/rank): the cosine of
//     every candidate plus the BM25 score divided by the most the query can
//     score in the namespace. Bonuses follow for a turn said by a speaker the
//     query names, for a memory of the day or month the query names ("on 7
//     July, 2023"), and a small one for recency; the ranked memories are
//     packed into a token budget (Config.BudgetTokens, default 1000, or the
//     request's own). Each turn is indexed with its neighbours (two on each
//     side for BM25, one for its vector), so an answer is found by the
//     words of its question. The dense query also moves towards the best
//     candidates once (pseudo-relevance feedback).
//  2. Prompt: the caller's messages plus one clearly delimited memory block,
//     each memory with its date, placed as a system message before the
//     caller's last user turn.
//  3. Generation with a Generator chosen by the request's model from a
//     registry built at start-up: the upstream OpenAI-compatible models and
//     the built-in extractive fallback "memory-extractive", which answers by
//     quoting the selected memories and says so.
//  4. Persistence: the new user and assistant turns are stored as memories of
//     kind turn. Turns are deduplicated by content within a conversation
//     (the request's conversation id, or one derived from its first user
//     message), so a client that resends its whole history stores each turn
//     once; the store serialises writes, so concurrent turns lose nothing.
//  5. Learning: with an upstream model, durable facts are extracted from the
//     turn as JSON; a fact that contradicts an earlier one supersedes it, and
//     both are kept (the old one with its invalid-from time). Extraction that
//     fails after its retries is recorded as a Failure, never dropped.
//
// The package depends on packages domain, rank (fusion formulas, top-k),
// terms (query words) and vecmath; storage (Store), embeddings
// (Embedder), token counting (TokenCounter) and generation (Generator) are
// interfaces it declares and others implement.
package memory

// Package builtin is svc-1's built-in engine: a deterministic, stateless
// retrieval policy that speaks exactly the protocol of the model.
//
// Everything it knows comes from the messages of the request. It reads which
// of the four tools (search, text_search, read, report_helpful_ids) exist
// from the system prompt; rebuilds what happened so far from the assistant
// tool calls and the tool messages (read with internal/toolresult, so any
// reasonable result shape works and an empty or malformed result is no hits);
// and decides the next reply:
//
//   - first turn: parallel search calls for the question and text_search
//     calls for its quoted phrases, names and identifiers and for its
//     keywords (multi-part questions are decomposed into their parts);
//   - later turns: fuse the evidence of every result list (weighted
//     reciprocal-rank fusion plus term coverage of the question and links
//     between documents), read decisive hits whose text was truncated, and,
//     while the evidence does not cover the question, hop: search the bridge
//     entities named by the top documents, and a pseudo-relevance-feedback
//     query; a query already issued is never issued again;
//   - documents without a title get one from their text's lead when it has
//     the shape of "title text" passages (the title's words come back at the
//     start of the first sentence); when most documents still have none
//     (chat turns, notes), there is nothing to bridge: the policy reports
//     after the first turn, in the order of the question's own search, with
//     the turns of speakers the question names ("Melanie: …") first;
//   - last turn (evidence covers the question, nothing new to search, or the
//     turn or tool-call budget is spent): report_helpful_ids with the ids
//     ranked by fused evidence.
//
// The reasoning says briefly what it did and why. The same messages always
// give the same reply, call ids included.
package builtin

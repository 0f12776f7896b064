// Package builtin is svc-1's built-in engine: a deterministic, stateless
// retrieval policy that speaks exactly the protocol of the model.
//
// Everything it knows comes from the messages of the request. It plays four
// roles (search, text_search, read, report_helpful_ids) with the client's
// tools: the documented names in the system prompt, other names the system
// prompt describes one to a line ("- grep_pages(pattern): exact match …"),
// or full tool definitions (name, description, JSON-schema parameters). It
// maps each role to the tool whose name and description fit it best and
// fills the arguments the tool declares (a grep tool's "pattern", a read
// tool's "doc_id", the report's array); a role no tool plays is said in the
// reasoning and left out. It rebuilds what happened so far from the
// assistant tool calls and the tool messages (read with internal/toolresult,
// so any reasonable result shape works and an empty or malformed result is
// no hits), and decides the next reply:
//
//   - first turn: parallel search calls for the question and text_search
//     calls for its quoted phrases, names and identifiers and for its
//     keywords (multi-part questions are decomposed into their parts); a
//     parallel question, whose facts sit side by side rather than in a
//     chain ("Does the Oslo memo say X, while the Lyon memo says Y?",
//     "Which supplier did both Acme and Globex drop?"), is searched once
//     per sub-question: each clause, and each name of a conjunction with
//     the rest of its clause (subQuestions);
//   - for a parallel question, the ranking's best ReportLimit always hold
//     each sub-question's first hit (SubKeep) and, when the question has
//     several clauses, the first AnchorKeep (7) hits of the question's own
//     search: the hops add evidence without pushing out any fact's best
//     evidence, nor what one search for a question that states each of its
//     facts found at its top (a chain question keeps none: its later
//     documents are those the hops add);
//   - later turns: fuse the evidence of every result list (weighted
//     reciprocal-rank fusion plus term coverage of the question and links
//     between documents), read decisive hits whose text was truncated, and
//     hop: follow the bridges the evidence names, each by name and together
//     with the question's terms the document naming it lacks (so the entity
//     resolved by one hop is carried into the next hop's query), plus a
//     pseudo-relevance-feedback query; a query already issued is never
//     issued again;
//   - bridges come from the documents' text, not their titles: proper-noun
//     phrases and identifiers, quoted strings, dates and numbers, ranked by
//     the rank of the documents that state them, how early they come, whether
//     they fill the slot of one of the question's relations ("directed by ___"
//     for "the director of"; a relation the text states by another word fills
//     it too: "the daughter of ___" for "the father of", "recorded by ___" for
//     "the performer of", relationWords), and how specific they are; after the
//     first hop the best documents the last hop found (the chain's frontier)
//     give bridges too, and so do the documents whose subject the question
//     names (each arm of a comparison gives its own hop). A document's subject
//     (its title, a title read from a "title text" lead, or else the name its
//     text starts with, the whole phrase when its first sentence defines it:
//     "Una storia d'amore is a 1942 film", not "Una"; of the longest passage
//     seen, or of another one when that names none) is never its own bridge
//     and links documents that name it, also by the name a quoted nickname
//     gives it ("Cheech Marin" for Richard Anthony "Cheech" Marin);
//   - a name and its short form are linked from the text seen (aliases):
//     a short form of three to six capitals that spells a name's initials
//     ("SBF" for "Sam Bankman-Fried", "IRC" for "Infrastructure Review
//     Committee"), one form in the question and the other in a document;
//     the next hop looks the other form up by keyword, and a document that
//     writes the other form holds the question's form in the coverage of
//     the question's terms;
//   - the hops go on while the evidence does not cover the question's terms,
//     each hop adds a document to the best ReportLimit (the evidence grows),
//     and the turn and call budgets last (defaults: four hops);
//   - chat turns ("Melanie: I went camping") have no chain to follow: when
//     most documents are turns, the policy reports after the first turn, in
//     the order of the question's own search (the turns of speakers the
//     question names first among its hits), and only then the turns the
//     keyword and name searches added: the loop never drops a turn that
//     one search for the question found;
//   - last turn: report_helpful_ids with the documents that carry the
//     evidence, ranked by fused evidence.
//
// The report's cut-off: of the best ReportLimit (10) documents, those whose
// evidence score (rank fusion, coverage and link evidence, as ranked) is at
// least ReportCut (default 0.5) times the best document's are reported, and
// those linked to the chain (the question or the top document names the
// document's subject, or the document names the top one's) need ReportLinkCut
// (0.25) times it; a document that shares none of the question's terms is
// linked only when the name sits in the slot of one of the question's
// relations, in the same sentence ("Marta Ruiz keeps the spare unit" for
// "who keeps the spare router", not "… fails halfway. Marta Ruiz keeps …"
// for "how do I bring the router back"). The first MinReport (2) always
// are, in rank order. Then the report is sized to the chains the loop
// resolved: from the top document and from each reported document whose
// subject the question names as a name (an arm: "film A" and "film B" in
// "Are the directors of films A and B from the same country?"), the
// best-ranked document it names as a name in the slot of one of the
// question's relations ("directed by Tim Burton") is reported too, and from
// that one the next, one per hop the loop made: a two-armed question
// reports its four documents, a bridge question its two. A parallel
// question also reports, for each sub-question, the best-ranked of that
// sub-question's first three hits (one document per fact it joins), and
// what the ranking's best ReportLimit always hold for it (each
// sub-question's first hit and, for a question of several clauses, the
// first AnchorKeep hits of its own search): the report of a question that
// joins several facts, whose evidence sits among many documents alike, is
// never short of what one search for it found at its top. A subject read
// from a document's own lead may be named by its shorter form elsewhere
// ("Vernon Campbell Sewell" as "Vernon Sewell"): its first or second word
// with its last count too, and so does a given name's familiar form with
// the last word, read from the given name's start or end ("Tim McGraw" for
// "Samuel Timothy McGraw", "Drew Fortier" for "Andrew Fortier").
// Documents seen below the cut are left out, so the report is the answer's
// evidence rather than everything seen. Chat turns are reported in the
// question's order, up to ReportLimit, without the cut. A negative ReportCut
// turns the cut off.
//
// The reasoning says briefly what it did and why. The same messages always
// give the same reply, call ids included. The engine rebuilds the
// conversation from the messages on every turn; what it derives from their
// text alone (the hits of each tool message, each document's lower-cased
// text, lead title and lead name, which of the question's terms a document
// holds, the tools a system prompt describes) it remembers across requests
// in a bounded memo (memo.go), so that a turn does not redo the work of the
// turns before it: a reply is the same with or without it.
package builtin

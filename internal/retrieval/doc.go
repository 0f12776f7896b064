// Package retrieval is the hybrid search core of a capsule: BM25 from the
// store's full-text index, an exact dense scan over the capsule's chunk
// vectors held in memory, and their fusion into one ranked list.
//
// # Index
//
// An Engine keeps, per capsule, the searchable items (with their metadata,
// for filters and results) and their chunk vectors, one contiguous float32
// block per item. A capsule is loaded from the Source on its first query and
// kept current by the capsule service, which calls ItemIndexed, ItemUpdated,
// ItemRemoved and CapsuleRemoved after each commit. Loading and updates of one
// capsule are serialised by the capsule's lock, so an update that commits
// while the capsule loads is never lost.
//
// # Filters
//
// A wishlist compiles to a predicate over items (Compile). Filters apply
// inside retrieval: the dense scan skips items the predicate rejects before
// any dot product, and BM25 results stream from the store in rank order
// through the same predicate until enough candidates are found, so a filtered
// query returns up to its limit whenever that many chunks match.
//
// # Scores
//
// Every score is in [0, 1], higher is better:
//
//   - dense: the cosine of the (unit) query and chunk vectors, clamped at 0;
//   - keyword: the BM25 score x squashed as x/(x+K) (K = BM25Scale);
//   - hybrid (default FusionConvex): Alpha·dense + (1−Alpha)·keyword, with the
//     dense cosine computed exactly for every BM25 candidate and the keyword
//     score 0 for dense candidates that BM25 did not find; or, with FusionRRF,
//     reciprocal rank fusion Σ 1/(RRFK+rank) divided by its maximum 2/(RRFK+1).
//
// A recency preference then blends in 2^(−age/half-life); min_score and
// max_chunks_per_item apply last. Ties break by item id, then idx.
//
// The defaults come from SciFact train queries (never test), measured by
// `capsuled bench retrieval --split train --max-docs 700 --sweep` (700
// documents: every one relevant to a train query, then others; 1,776 chunks;
// all-MiniLM-L6-v2): nDCG@10 keyword 0.8155, dense 0.8273; RRF k=20 0.8555,
// k=60 0.8530; convex K=10 with Alpha 0.3/0.4/0.5/0.6/0.7/0.8: 0.8544 0.8623
// 0.8648 0.8659 0.8655 0.8592 (K=5 and K=20 within 0.002 of K=10). The convex
// mix beats RRF at every Alpha from 0.4 to 0.7, so it is the default, with
// Alpha 0.6 and K 10.
package retrieval

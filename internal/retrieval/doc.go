// Package retrieval is the hybrid search core of a capsule: BM25 from the
// store's full-text index, a dense scan over the capsule's chunk vectors held
// in memory (exact, or approximate in large capsules) or the store's own
// vector search, and their fusion into one ranked list.
//
// # Two kinds of source
//
// Over a plain Source (SQLite) the Engine keeps each capsule's items and
// vectors in memory and scans them itself (Index, Dense scan below). Over a
// StoreSearcher (PostgreSQL: pgvector's HNSW index, iterative scans, the
// filters in SQL) it keeps nothing per capsule: each query asks the store for
// the dense and keyword candidate lists, with the wishlist's filters applied
// in the store's scans, then for those candidates' items and for the cosines
// of keyword candidates the dense list left out, checks every candidate
// against the filters in Go (a store may apply only some), asks again deeper
// when that check shortened a list, and fuses, scores and orders the
// candidates exactly as over its own index. Memory then does not grow with
// the corpus, and several processes sharing the store need not reload
// anything when one changes a capsule.
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
// # Dense scan
//
// The scan is split across GOMAXPROCS workers (one per 8,192 chunks at
// most), each keeping its own top-k heap of value records, merged at the end;
// the dot product is an 8-way unrolled float32 loop (vectors are unit length,
// so the dot product is the cosine). Capsules of at least ApproxMin chunks
// (default 50,000) are searched approximately: each chunk also keeps the sign
// bits of its vector minus the capsule's mean vector (48 bytes at 384
// dimensions; centring matters because sentence embeddings share a common
// direction), each worker picks the Hamming-nearest codes of the items the
// filter accepts, ApproxRerank of them (default 1,000) or a sixteenth of its
// chunks if more (a fixed count loses recall as the capsule grows), and
// scores only those exactly. A filter that leaves no more chunks than that is scanned exactly,
// so selective filters lose nothing.
//
// Exact search costs time in proportion to the capsule's chunks; the
// approximate scan's cost grows far more slowly, which is why it takes over
// from ApproxMin chunks. BenchmarkDenseScan (200,000 synthetic 384-d
// vectors) measures both scans, their recall against each other and the
// heap per chunk; `capsuled bench retrieval` reports the approximate scan's
// recall on real vectors (approx_recall_at_10). The current figures are in
// docs/benchmarks.md.
//
// # Graph
//
// Capsules of at least GraphMin chunks (default 100,000) are searched
// through an HNSW graph (graph.go) instead: the approximate scan's cost grows
// with the chunks (about 60 CPU-ms a query at 1,000,000), the graph's far
// more slowly; at 100,000 chunks the graph costs about half the scan's CPU
// time at recall@10 1.000, at 20,000 six times more (BenchmarkDenseGraph). The graph
// holds links, not vectors: its nodes point at the flat index's vectors.
// It is built in the background on one goroutine when a capsule is loaded or
// grows past GraphMin (the scan serves until it is installed; Close and
// CapsuleRemoved cancel it), and then kept current item by item: an indexed
// item's chunks are inserted, a removed item's nodes marked dead (they still
// route searches, never returned), and once a quarter of the nodes are dead
// the graph is rebuilt in the background. Changes made during a build are
// applied to the new graph before it is installed. A capsule that shrinks
// below GraphMin/2 drops its graph. With Config.GraphDir (the capsule
// service sets its data directory's graphs/), a built graph is written to a
// file there, and again at Close if it changed since; the capsule's next
// load reads the file instead of building, keeping the nodes whose item
// still has the same vectors (checked by id, chunk count and CRC-32C),
// marking the others dead and inserting the items the file lacks
// (graphfile.go).
//
// A graph search returns the GraphEf nearest chunks it finds (at least the
// requested depth; by default GraphEfFor the capsule's chunks: 256 up to
// 125,000 chunks, then growing with the cube root of the chunks, 512 at a
// million, since at a fixed beam width recall falls as the graph grows),
// with their exact cosines, so scores and ties are the scan's. With a filter, the share of chunks it passes is
// estimated from 256 items spread over the capsule: a filter passing s of
// the capsule's C chunks costs the graph about defaultGraphCost/s scored
// nodes and the scan s·C, so the graph serves when s·C exceeds that
// (at 1,000,000 chunks: s above about 13%), the filter checked on each node
// the search reaches; a search that reaches too few passing chunks falls
// back to the scan. BenchmarkDenseGraph measures build time, memory, query
// time and recall@10 of the graph against the scan.
//
// # Vectors files
//
// Where the Source keeps per-item vector checksums (VectorSummer: the
// SQLite store) and Config.GraphDir is set, capsules of at least
// DefaultVectorFileMin chunks keep their vectors and sign codes in a file
// beside the graph's (vecfile.go), written after a load that read vectors
// from the store and at Close when items changed. The next load maps the
// file read-only and takes from it each item whose vector count and
// CRC-32C there equal the store's, reading only the other items' vectors
// from the store: a restart reads no vectors, and the vectors are pages of
// the kernel's page cache rather than Go heap. A background pass then
// checks the mapped bytes against the file's CRCs (items found damaged
// are read from the store again) and drops the pages it touched from the
// process's resident set. Entries never change once indexed (a change
// makes a new entry), so graph builds and file writes read them without
// the lock.
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
// Every score is in [0, 1], higher is better, on one scale for all modes:
//
//   - dense: the cosine of the (unit) query and chunk vectors, clamped at 0
//     (0 means unrelated, as for keyword);
//   - keyword (KeywordNormQuery, and KeywordNormCoverage, the default): the
//     chunk's BM25 score divided by the most the query can score in this
//     capsule, the sum over its terms of
//     each term's best single-term score (a term found nowhere counting as
//     the mean of the others). The capsule's best match for every term scores
//     1, a chunk with half the query's weight about 0.5. This stays
//     meaningful in tiny capsules, where FTS5's IDF collapses to 1e-6 (a term
//     in half the rows or more) and raw scores are all near 0. It costs one
//     single-term FTS5 query per query term not yet seen, run beside the rest
//     of the query; each term's best score is cached per capsule and the
//     cache is cleared by any change to any capsule (IDF counts every
//     capsule's rows; on a shared PostgreSQL store another replica's change
//     clears it when this replica next queries the changed capsule and sees
//     its generation moved).
//     KeywordNormSaturate, x/(x+K) with K = BM25Scale, is the former mapping;
//   - hybrid (default FusionConvex): Alpha·dense + (1−Alpha)·keyword′, with
//     the dense cosine computed exactly for every BM25 candidate and the
//     keyword score 0 for dense candidates that BM25 did not find. Under the
//     default KeywordNormCoverage, keyword′ is the keyword score times the
//     share of the query's terms that occur in the capsule at all
//     (rank.CoveredKeyword): keyword matching speaks only for the words the
//     capsule uses. In a small capsule, a chunk whose one keyword match is
//     the one query word of three the capsule holds ("rises" in a text on
//     volcanoes, for "why does the sea rise and fall") used to score a third
//     of the keyword weight and beat a clearly better dense match; it now
//     adds a ninth. Where the capsule holds every query word, as large ones
//     do, keyword′ is the keyword score. KeywordNormQuery is the unweighted
//     mix. With FusionRRF, reciprocal rank fusion Σ 1/(RRFK+rank) divided by
//     its maximum 2/(RRFK+1).
//
// A chunk whose fused score is 0 (no keyword match, cosine at most 0) has
// no relevance and is never a hit: a query returns fewer than its limit
// rather than pad it. A recency preference then scales each relevant
// chunk's score by (1−w) + w·2^(−age/half-life) (rank.RecencyScore): it
// reorders relevant chunks and never lifts an unrelated one by itself;
// min_score and max_chunks_per_item apply last. Ties break by item id,
// then idx.
//
// The fusion and its weight (FusionConvex, Alpha 0.5, the query-relative
// keyword score) were chosen on SciFact's train queries, never its test
// queries, with `capsuled bench retrieval --split train --sweep`; the sweep
// is in docs/experiments/retrieval.md. The coverage weight
// (KeywordNormCoverage, the default) was not tuned on any benchmark: it
// fixes small capsules (issue 20), and SciFact's and HotpotQA's figures
// were re-measured with it (docs/benchmarks.md).
package retrieval

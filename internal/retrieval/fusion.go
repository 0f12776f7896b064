package retrieval

// The core's score formulas, shared with the memory selection
// (internal/memory) so that both rank by the same rules.

// QueryMaxBM25 is the most a query can score by BM25 given each of its
// terms' best single-term score (bounds, one per term; 0 for a term that
// matches nothing): their sum, a term that matches nothing counting as the
// mean of those that match. 0 when no term matches.
func QueryMaxBM25(bounds []float64) float64 {
	sum, found := 0.0, 0
	for _, best := range bounds {
		if best > 0 {
			sum += best
			found++
		}
	}
	if found == 0 {
		return 0
	}
	return sum * float64(len(bounds)) / float64(found)
}

// KeywordScore is a raw BM25 score relative to the query's best attainable
// one (QueryMaxBM25), in [0, 1] (KeywordNormQuery).
func KeywordScore(bm25, kwMax float64) float64 {
	if bm25 <= 0 || kwMax <= 0 {
		return 0
	}
	return min(bm25/kwMax, 1)
}

// ConvexScore is the hybrid score alpha·dense + (1−alpha)·keyword, a
// negative cosine counting as 0 (FusionConvex).
func ConvexScore(alpha, dense, keyword float64) float64 {
	return alpha*max(dense, 0) + (1-alpha)*keyword
}

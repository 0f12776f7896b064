package rank

// The hybrid score formulas. capsuled fuses keyword (BM25) and dense
// (cosine) rankings in three places, with their own constants:
//
//   - Capsule retrieval (retrieval.Engine.fuse): ConvexScore with Alpha 0.5
//     and the query-relative KeywordScore, every candidate in [0, 1] and
//     comparable across queries (it is what MinScore filters on); or, with
//     FusionRRF, RRF with k 60 scaled by its maximum to [0, 1].
//   - Memory selection (memory.Service.Select): the same ConvexScore (its
//     default FusionCore) with alpha DenseWeight/(1+DenseWeight), 0.5 by
//     default, multiplied by (1+DenseWeight)·RRF(1, 60, 1): memory adds
//     further bonuses (speaker, date, recency, a second keyword list for
//     the conversation's context) in units of a first-rank RRF score, so
//     its fused score is in those units too. Its FusionRRF uses RRF with
//     k 60 per list, and FusionConvex min-max normalises each list.
//   - The built-in engine (internal/engine/builtin, the svc-1 policy):
//     weighted reciprocal rank w/(5+r) over every tool result list of the
//     conversation (w 0.8 for hop searches), plus term coverage. It fuses
//     ranks only, because tool results carry no comparable scores, and its
//     small k makes the first hits of each of many short lists count.
//
// The first two share the functions below on purpose; the third is the
// agent's own policy and is tuned on its own benchmark (bench agent).

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
// one (QueryMaxBM25), in [0, 1] (retrieval.KeywordNormQuery).
func KeywordScore(bm25, kwMax float64) float64 {
	if bm25 <= 0 || kwMax <= 0 {
		return 0
	}
	return min(bm25/kwMax, 1)
}

// ConvexScore is the hybrid score alpha·dense + (1−alpha)·keyword, a
// negative cosine counting as 0. It is the one fusion formula of capsule
// retrieval (retrieval.FusionConvex, the default) and of memory selection
// (memory.FusionCore, the default), shared on purpose: changing it changes
// both rankings (see the package comment).
func ConvexScore(alpha, dense, keyword float64) float64 {
	return alpha*max(dense, 0) + (1-alpha)*keyword
}

// DefaultRRFK is k of reciprocal-rank fusion in capsule retrieval and
// memory selection.
const DefaultRRFK = 60

// RRF is the reciprocal-rank score weight/(k+rank) of a 1-based rank.
func RRF(weight, k float64, rank int) float64 {
	return weight / (k + float64(rank))
}

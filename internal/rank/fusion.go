package rank

// The hybrid score formulas. capsuled fuses keyword (BM25) and dense
// (cosine) rankings in three places, with their own constants:
//
//   - Capsule retrieval (retrieval.Engine.fuse): ConvexScore with Alpha 0.5
//     of the cosine and the query-relative KeywordScore weighted by the
//     query's coverage (CoveredKeyword), every candidate in [0, 1] and comparable
//     across queries (it is what MinScore filters on), scaled by
//     RecencyScore when the query asks; or, with FusionRRF, RRF with k 60
//     scaled by its maximum to [0, 1].
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
// Memory selection does not weight its keyword score by the query's
// coverage (CoveredKeyword): a namespace's turns are short and its other
// bonuses already rank them, and the weight has not been measured on
// LoCoMo.

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

// QueryCoverage is the share of a query's terms that match something in
// the capsule, given each term's best single-term score (bounds, as for
// QueryMaxBM25): 1 when every term occurs somewhere, 0 when none does.
func QueryCoverage(bounds []float64) float64 {
	found := 0
	for _, best := range bounds {
		if best > 0 {
			found++
		}
	}
	if len(bounds) == 0 {
		return 0
	}
	return float64(found) / float64(len(bounds))
}

// CoveredKeyword is the keyword side of the hybrid score
// (retrieval.KeywordNormCoverage): a query-relative KeywordScore kw weighted
// by the share of the query's terms the capsule holds at all (cover,
// QueryCoverage). Keyword matching can only speak for the words the capsule
// uses: in a small capsule that holds one of the query's three words, a
// chunk whose only match is that word (kw 1/3: the words found nowhere
// weigh as much as the found one) adds 1/9, so an incidental word cannot
// outrank a clearly better dense match, while in a capsule that holds every
// query word (the usual case in a large one) kw counts in full.
func CoveredKeyword(kw, cover float64) float64 {
	return min(max(kw, 0), 1) * min(max(cover, 0), 1)
}

// RecencyScore scales a relevance score in [0, 1] by its recency:
// score·((1−weight) + weight·decay), decay = 2^(−age/half-life) in [0, 1].
// It multiplies rather than adds, so recency reorders relevant hits and
// never lifts an irrelevant one: relevance 0 stays 0, and with weight w a
// hit keeps at least 1−w of its relevance however old it is.
func RecencyScore(score, weight, decay float64) float64 {
	weight = min(max(weight, 0), 1)
	return min(max(score, 0), 1) * ((1 - weight) + weight*min(max(decay, 0), 1))
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

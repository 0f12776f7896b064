// Package vecmath holds capsuled's vector operations, on float32 vectors:
// mean pooling over an attention mask and L2 normalisation (the embedders),
// cosine similarity with float64 accumulation (memory selection, tests), and
// the float32 inner product of unit vectors that the dense scan of capsule
// retrieval runs per chunk.
//
// The two similarity functions round differently on purpose: Cosine
// accumulates in float64 and divides by the norms, so it takes vectors of
// any length; Dot accumulates in float32, eight sums at once, and is only
// the cosine for unit vectors (which every stored chunk vector is). Each
// caller keeps the one its rankings were measured with.
package vecmath

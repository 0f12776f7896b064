// Package vecmath holds the small vector operations the embedders share:
// mean pooling over an attention mask, L2 normalisation and cosine
// similarity, all on float32 with float64 accumulation.
package vecmath

package bert

import "math/rand/v2"

// Random returns weights of the given shape drawn from a seeded
// generator: for tests that need a model without the real checkpoint.
func Random(cfg Config, seed uint64) *Weights {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vec := func(n int, scale float32, offset float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = offset + scale*float32(r.NormFloat64())
		}
		return v
	}
	h, ff := cfg.HiddenSize, cfg.IntermediateSize
	lin := func(in, out int) Linear {
		return Linear{W: vec(in*out, 0.08, 0), B: vec(out, 0.02, 0), In: in, Out: out}
	}
	norm := func() Norm { return Norm{Gamma: vec(h, 0.05, 1), Beta: vec(h, 0.02, 0)} }
	w := &Weights{
		Config:    cfg,
		Word:      vec(cfg.VocabSize*h, 0.5, 0),
		Position:  vec(cfg.MaxPositions*h, 0.1, 0),
		TokenType: vec(cfg.TypeVocabSize*h, 0.1, 0),
		EmbNorm:   norm(),
	}
	for range cfg.NumLayers {
		w.Layers = append(w.Layers, Layer{
			Query: lin(h, h), Key: lin(h, h), Value: lin(h, h), AttnOut: lin(h, h), AttnNorm: norm(),
			Intermediate: lin(h, ff), Output: lin(ff, h), OutNorm: norm(),
		})
	}
	return w
}

// TinyConfig is a small BERT shape for tests.
func TinyConfig() Config {
	return Config{VocabSize: 64, HiddenSize: 16, NumLayers: 2, NumHeads: 4, IntermediateSize: 32,
		MaxPositions: 32, TypeVocabSize: 2, LayerNormEps: 1e-12, HiddenAct: "gelu", ModelType: "bert"}
}

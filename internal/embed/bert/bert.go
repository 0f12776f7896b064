package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"capsuled/internal/embed/safetensors"
)

// Config is the part of a Hugging Face BERT config.json the forward pass
// needs.
type Config struct {
	VocabSize        int     `json:"vocab_size"`
	HiddenSize       int     `json:"hidden_size"`
	NumLayers        int     `json:"num_hidden_layers"`
	NumHeads         int     `json:"num_attention_heads"`
	IntermediateSize int     `json:"intermediate_size"`
	MaxPositions     int     `json:"max_position_embeddings"`
	TypeVocabSize    int     `json:"type_vocab_size"`
	LayerNormEps     float64 `json:"layer_norm_eps"`
	HiddenAct        string  `json:"hidden_act"`
	ModelType        string  `json:"model_type"`
	PositionType     string  `json:"position_embedding_type"`
}

// LoadConfig reads dir/config.json and checks that it describes a model
// this package can run.
func LoadConfig(dir string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return c, fmt.Errorf("bert: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("bert: config.json: %w", err)
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.ModelType != "" && c.ModelType != "bert":
		return fmt.Errorf("bert: model_type %q is not bert", c.ModelType)
	case c.HiddenAct != "" && c.HiddenAct != "gelu":
		return fmt.Errorf("bert: hidden_act %q unsupported (want gelu)", c.HiddenAct)
	case c.PositionType != "" && c.PositionType != "absolute":
		return fmt.Errorf("bert: position_embedding_type %q unsupported", c.PositionType)
	case c.HiddenSize <= 0 || c.NumHeads <= 0 || c.HiddenSize%c.NumHeads != 0:
		return fmt.Errorf("bert: hidden_size %d not divisible into %d heads", c.HiddenSize, c.NumHeads)
	case c.NumLayers <= 0 || c.IntermediateSize <= 0 || c.VocabSize <= 0 || c.MaxPositions <= 0:
		return fmt.Errorf("bert: config has non-positive sizes: %+v", c)
	}
	return nil
}

// HeadDim is the width of one attention head.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumHeads }

// Linear is a dense layer y = x·Wᵀ + B with W in PyTorch's [Out, In] layout.
type Linear struct {
	W       []float32
	B       []float32
	In, Out int
}

// Norm is a LayerNorm's scale and shift.
type Norm struct{ Gamma, Beta []float32 }

// Layer is one transformer block.
type Layer struct {
	Query, Key, Value, AttnOut Linear
	AttnNorm                   Norm
	Intermediate, Output       Linear
	OutNorm                    Norm
}

// Weights is a whole encoder.
type Weights struct {
	Config
	Word, Position, TokenType []float32 // [vocab|positions|types, hidden]
	EmbNorm                   Norm
	Layers                    []Layer
}

// Load reads dir/config.json and dir/model.safetensors.
func Load(dir string) (*Weights, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	r := reader{f: f}
	if _, ok := f.Tensor("bert.embeddings.word_embeddings.weight"); ok {
		r.prefix = "bert."
	}
	h, ff := cfg.HiddenSize, cfg.IntermediateSize
	w := &Weights{Config: cfg}
	w.Word = r.get("embeddings.word_embeddings.weight", cfg.VocabSize, h)
	w.Position = r.get("embeddings.position_embeddings.weight", cfg.MaxPositions, h)
	w.TokenType = r.get("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, h)
	w.EmbNorm = r.norm("embeddings.LayerNorm", h)
	for i := range cfg.NumLayers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		w.Layers = append(w.Layers, Layer{
			Query:        r.linear(p+"attention.self.query", h, h),
			Key:          r.linear(p+"attention.self.key", h, h),
			Value:        r.linear(p+"attention.self.value", h, h),
			AttnOut:      r.linear(p+"attention.output.dense", h, h),
			AttnNorm:     r.norm(p+"attention.output.LayerNorm", h),
			Intermediate: r.linear(p+"intermediate.dense", h, ff),
			Output:       r.linear(p+"output.dense", ff, h),
			OutNorm:      r.norm(p+"output.LayerNorm", h),
		})
	}
	if r.err != nil {
		return nil, fmt.Errorf("bert: %s: %w", dir, r.err)
	}
	return w, nil
}

// reader loads tensors, remembering the first error.
type reader struct {
	f      *safetensors.File
	prefix string
	err    error
}

func (r *reader) get(name string, shape ...int) []float32 {
	if r.err != nil {
		return nil
	}
	v, got, err := r.f.Float32(r.prefix + name)
	if err != nil {
		r.err = err
		return nil
	}
	if len(got) != len(shape) {
		r.err = fmt.Errorf("tensor %s has shape %v, want %v", name, got, shape)
		return nil
	}
	for i := range got {
		if got[i] != shape[i] {
			r.err = fmt.Errorf("tensor %s has shape %v, want %v", name, got, shape)
			return nil
		}
	}
	return v
}

func (r *reader) linear(name string, in, out int) Linear {
	return Linear{W: r.get(name+".weight", out, in), B: r.get(name+".bias", out), In: in, Out: out}
}

func (r *reader) norm(name string, n int) Norm {
	g := r.get(name+".weight", n)
	if r.err != nil {
		// older checkpoints name them gamma and beta
		r.err = nil
		return Norm{Gamma: r.get(name+".gamma", n), Beta: r.get(name+".beta", n)}
	}
	return Norm{Gamma: g, Beta: r.get(name+".bias", n)}
}

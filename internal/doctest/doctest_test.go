package doctest

import (
	"bufio"
	"bytes"
	"context"

	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// skipped are the README blocks the test does not run, by their first line.
var skipped = map[string]string{
	"go run ./cmd/capsuled serve": "the test starts this server itself, from the same code, on a free port",
	"bash .ci/test":               "this is the test suite that runs this test",
}

// block is one fenced shell block of a Markdown file.
type block struct {
	file string
	line int
	text string
}

// shellBlocks returns the ```sh / ```bash / ```shell blocks of path.
func shellBlocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []block
	var cur *block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && (line == "```sh" || line == "```bash" || line == "```shell"):
			cur = &block{file: filepath.Base(path), line: n + 1}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// build compiles capsuled into dir.
func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "capsuled")
	if out, err := exec.Command("go", "build", "-o", bin, "capsuled/cmd/capsuled").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for the server's writes and the test's
// reads.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.buf.Write(p)
}
func (s *syncBuffer) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.buf.String()
}

// handbook is the ./handbook/ folder README's examples add to a capsule.
var handbook = map[string]string{
	"leave.md":       "# Leave\n\nEvery employee gets 25 days of paid leave a year. Unused days carry over until March.\n",
	"teams.md":       "# Teams\n\nThe billing service is owned by the Payments team. Dana Ruiz leads the Payments team.\n",
	"onboarding.txt": "New starters get a laptop on their first day and meet their buddy in the first week.\n",
}

func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts capsuled")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root := repoRoot(t)
	tmp := t.TempDir()
	bin := build(t, tmp)
	work := filepath.Join(tmp, "work")
	for name, text := range handbook {
		p := filepath.Join(work, "handbook", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	addr := freeAddr(t)
	args := []string{"serve", "--addr", addr, "--data", "./data", "--model-fetch=false", "--log-level", "warn"}
	if dir := os.Getenv("CAPSULED_ONNX_DIR"); dir != "" {
		args = append(args, "--onnx-dir", dir)
	} else {
		args = append(args, "--embedder", "off")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, bin, args...)
	srv.Dir = work
	out := newSyncBuffer()
	srv.Stdout, srv.Stderr = out, out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = srv.Wait() })
	key := ""
	keyRE := regexp.MustCompile(`csk_[A-Za-z0-9]+`)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			key = keyRE.FindString(out.String())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if key == "" {
		t.Fatalf("no admin key in the server's output:\n%s", out.String())
	}
	env := append(os.Environ(),
		"PATH="+tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KEY="+key, "CAPSULED_API_KEY="+key, "CAPSULED_URL=http://"+addr,
	)

	t.Run("README.md", func(t *testing.T) {
		for _, b := range shellBlocks(t, filepath.Join(root, "README.md")) {
			first := strings.TrimSpace(strings.SplitN(b.text, "\n", 2)[0])
			if why, ok := skipped[first]; ok {
				t.Logf("%s:%d not run: %s", b.file, b.line, why)
				continue
			}
			script := "set -euo pipefail\n" + strings.ReplaceAll(b.text, "127.0.0.1:8080", addr)
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir, cmd.Env = work, env
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s:%d failed: %v\n%s\n--- output:\n%s", b.file, b.line, err, b.text, got)
				continue
			}
			if bytes.Contains(got, []byte(`{"error":`)) {
				t.Errorf("%s:%d answered with an error:\n%s\n--- output:\n%s", b.file, b.line, b.text, got)
			}
		}
	})

	t.Run("docs", func(t *testing.T) {
		docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
		logs, _ := filepath.Glob(filepath.Join(root, "docs", "experiments", "*.md"))
		docs = append(docs, logs...)
		checked := 0
		for _, d := range docs {
			for _, b := range shellBlocks(t, d) {
				for _, line := range commandLines(b.text) {
					if !strings.HasPrefix(line, "capsuled ") {
						continue
					}
					cmd := exec.Command("bash", "-c", line)
					cmd.Dir = work
					cmd.Env = append(env, "CAPSULED_CHECK_ARGS=1", "SERVER_PID=1")
					got, err := cmd.CombinedOutput()
					if err != nil || !bytes.Contains(got, []byte("arguments ok")) {
						t.Errorf("%s (block at line %d): %q is not a command capsuled accepts: %v\n%s", b.file, b.line, line, err, got)
					}
					checked++
				}
			}
		}
		t.Logf("%d command lines of docs/ checked", checked)
	})
}

// commandLines joins continued lines (trailing backslash) and strips
// comments and a trailing "&".
func commandLines(text string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		cur += l
		cur = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(cur), "&"))
		if cur != "" {
			out = append(out, cur)
		}
		cur = ""
	}
	return out
}

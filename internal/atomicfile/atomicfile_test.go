package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"capsuled/internal/atomicfile"
)

// TestWrite: a write creates the folder and the file, a second replaces
// it, and a failing one leaves the last good file and no temporary file.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.bin")
	put := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	for _, s := range []string{"first", "second"} {
		if err := atomicfile.Write(path, ".f-*", put(s)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != s {
			t.Fatalf("after writing %q: %q %v", s, b, err)
		}
	}
	boom := errors.New("boom")
	err := atomicfile.Write(path, ".f-*", func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing write: %v, want boom", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "second" {
		t.Fatalf("after a failed write: %q %v, want the last good file", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".f-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

package app

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTokenizerCandidates(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	onnx := filepath.Join(root, "onnx")
	st := filepath.Join(root, "st")
	empty := filepath.Join(root, "empty")
	for _, d := range []string{onnx, st, empty} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("[PAD]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(onnx, "vocab.txt"))
	write(filepath.Join(onnx, "tokenizer.json"))
	write(filepath.Join(st, "tokenizer.json"))
	file := filepath.Join(root, "my-vocab.txt")
	write(file)

	tests := []struct {
		name string
		path string
		dirs []string
		want []string
	}{
		{"model folders in order, vocab.txt first", "", []string{"", empty, onnx, st, filepath.Join(root, "missing")},
			[]string{filepath.Join(onnx, "vocab.txt"), filepath.Join(onnx, "tokenizer.json"), filepath.Join(st, "tokenizer.json")}},
		{"an explicit file wins", file, []string{onnx}, []string{file}},
		{"an explicit folder", st, []string{onnx}, []string{filepath.Join(st, "tokenizer.json")}},
		{"a missing explicit path finds nothing", filepath.Join(root, "nope"), []string{onnx}, nil},
		{"nothing anywhere", "", []string{empty}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tokenizerCandidates(tt.path, tt.dirs)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

package ort

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libonnxruntime.so")
	if err := os.WriteFile(lib, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		explicit string
		env      string
		want     string
		wantErr  bool
	}{
		{"explicit", lib, "/nope", lib, false},
		{"env", "", lib, lib, false},
		{"explicit missing", filepath.Join(dir, "x.so"), "", "", true},
		{"env missing", "", filepath.Join(dir, "y.so"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(LibraryEnv, tt.env)
			got, err := FindLibrary(tt.explicit)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("FindLibrary = %q, %v; want %q, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, wantID string
	}{
		{"", "all-MiniLM-L6-v2"},
		{"model_quantized.onnx", "all-MiniLM-L6-v2-int8"},
	}
	for _, tt := range tests {
		c := Config{ModelFile: tt.file}.withDefaults()
		if c.ModelID != tt.wantID || c.MaxLen != 256 || c.Parallel != 1 || c.IntraOpThreads < 1 {
			t.Errorf("defaults for %q: %+v", tt.file, c)
		}
	}
}

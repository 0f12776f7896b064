package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// build writes a safetensors file from named float32 tensors.
func build(t testing.TB, header map[string]any, body []byte) []byte {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, body...)
}

func f32bytes(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func TestParse(t *testing.T) {
	t.Parallel()
	body := append(f32bytes(1, 2, 3, 4, 5, 6), 0x80, 0x3f, 0x00, 0x3c) // bf16 1.0, f16 1.0
	data := build(t, map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"w":            map[string]any{"dtype": "F32", "shape": []int{2, 3}, "data_offsets": []int{0, 24}},
		"b":            map[string]any{"dtype": "BF16", "shape": []int{1}, "data_offsets": []int{24, 26}},
		"h":            map[string]any{"dtype": "F16", "shape": []int{1}, "data_offsets": []int{26, 28}},
	}, body)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !slices.Equal(got, []string{"b", "h", "w"}) {
		t.Fatalf("names %v", got)
	}
	tests := []struct {
		name  string
		want  []float32
		shape []int
	}{
		{"w", []float32{1, 2, 3, 4, 5, 6}, []int{2, 3}},
		{"b", []float32{1}, []int{1}},
		{"h", []float32{1}, []int{1}},
	}
	for _, tt := range tests {
		got, shape, err := f.Float32(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) || !slices.Equal(shape, tt.shape) {
			t.Errorf("%s = %v %v, want %v %v", tt.name, got, shape, tt.want, tt.shape)
		}
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
	if _, _, err := f.Float32("missing"); err == nil {
		t.Error("missing tensor gave no error")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data []byte
	}{
		{"short", []byte{1, 2}},
		{"header too long", binary.LittleEndian.AppendUint64(nil, 1<<40)},
		{"bad json", append(binary.LittleEndian.AppendUint64(nil, 3), "{x}"...)},
		{"offsets beyond body", build(t, map[string]any{"w": map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int{0, 16}}}, f32bytes(1))},
		{"shape mismatch", build(t, map[string]any{"w": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{0, 4}}}, f32bytes(1))},
		{"bad dtype", build(t, map[string]any{"w": map[string]any{"dtype": "Q4", "shape": []int{1}, "data_offsets": []int{0, 4}}}, f32bytes(1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse(tt.data); err == nil {
				t.Fatal("Parse succeeded")
			}
		})
	}
}

func TestHalf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   uint16
		want float32
	}{{0x3c00, 1}, {0xc000, -2}, {0x0000, 0}, {0x3555, 0.33325195}, {0x0001, 5.9604645e-08}, {0x7bff, 65504}}
	for _, tt := range tests {
		if got := halfToFloat(tt.in); got != tt.want {
			t.Errorf("half %#04x = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(build(f, map[string]any{"w": map[string]any{"dtype": "F32", "shape": []int{1}, "data_offsets": []int{0, 4}}}, f32bytes(1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for _, n := range file.Names() {
			_, _, _ = file.Float32(n)
		}
	})
}

package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
)

// maxHeader bounds the JSON header so that a corrupt length cannot make
// the reader allocate without limit.
const maxHeader = 100 << 20

// Tensor is one named tensor of a file.
type Tensor struct {
	Name  string
	DType string // "F32", "F16", "BF16", "I64", ...
	Shape []int
	Data  []byte // raw little-endian bytes, a view into the file
}

// Len is the number of elements.
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file.
type File struct {
	tensors  map[string]Tensor
	Metadata map[string]string
}

// Open reads and parses the file at path.
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

type entry struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Parse parses a whole safetensors file held in data. Tensors alias data.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, errors.New("file shorter than its header length")
	}
	n := binary.LittleEndian.Uint64(data)
	if n > maxHeader || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("header length %d out of range", n)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &raw); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	body := data[8+n:]
	f := &File{tensors: make(map[string]Tensor, len(raw))}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("metadata: %w", err)
			}
			continue
		}
		var e entry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		size, ok := dtypeSize(e.DType)
		if !ok {
			return nil, fmt.Errorf("tensor %q: unsupported dtype %q", name, e.DType)
		}
		elems := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && elems > math.MaxInt32*64/int64(d)) {
				return nil, fmt.Errorf("tensor %q: bad shape %v", name, e.Shape)
			}
			elems *= int64(d)
		}
		b, end := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || end < b || end > int64(len(body)) || end-b != elems*int64(size) {
			return nil, fmt.Errorf("tensor %q: data offsets %v do not fit shape %v and dtype %s in %d bytes", name, e.DataOffsets, e.Shape, e.DType, len(body))
		}
		f.tensors[name] = Tensor{Name: name, DType: e.DType, Shape: e.Shape, Data: body[b:end:end]}
	}
	return f, nil
}

func dtypeSize(dt string) (int, bool) {
	switch dt {
	case "F64", "I64", "U64":
		return 8, true
	case "F32", "I32", "U32":
		return 4, true
	case "F16", "BF16", "I16", "U16":
		return 2, true
	case "I8", "U8", "BOOL":
		return 1, true
	}
	return 0, false
}

// Names lists the tensor names, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.tensors))
	for n := range f.tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (Tensor, bool) {
	t, ok := f.tensors[name]
	return t, ok
}

// Float32 returns the named tensor converted to float32 (a fresh slice)
// and its shape.
func (f *File) Float32(name string) ([]float32, []int, error) {
	t, ok := f.tensors[name]
	if !ok {
		return nil, nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	out := make([]float32, t.Len())
	switch t.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
	case "F16":
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	default:
		return nil, nil, fmt.Errorf("safetensors: tensor %q is %s, not a float type", name, t.DType)
	}
	return out, t.Shape, nil
}

// halfToFloat converts an IEEE 754 binary16 to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(mant) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

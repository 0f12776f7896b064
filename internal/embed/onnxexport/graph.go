package onnxexport

import (
	"fmt"
	"math"
)

// graph accumulates nodes and initializers of one GraphProto.
type graph struct {
	nodes  []msg
	inits  []msg
	seq    int
	consts map[string]string // dedup of small constants
}

// op adds a node with one output and returns the output's name.
func (g *graph) op(opType string, inputs []string, attrs ...msg) string {
	return g.opN(opType, inputs, 1, attrs...)[0]
}

// opN adds a node with n outputs.
func (g *graph) opN(opType string, inputs []string, n int, attrs ...msg) []string {
	g.seq++
	name := fmt.Sprintf("%s_%d", opType, g.seq)
	outs := make([]string, n)
	m := msg(nil)
	for _, in := range inputs {
		m = m.str(nodeInput, in)
	}
	for i := range outs {
		outs[i] = fmt.Sprintf("%s_out%d", name, i)
		m = m.str(nodeOutput, outs[i])
	}
	m = m.str(nodeName, name).str(nodeOpType, opType)
	for _, a := range attrs {
		m = m.bytes(nodeAttribute, a)
	}
	g.nodes = append(g.nodes, m)
	return outs
}

// rename makes the last node's first output carry a public name (a graph
// output).
func (g *graph) output(opType string, inputs []string, out string, attrs ...msg) {
	m := msg(nil)
	for _, in := range inputs {
		m = m.str(nodeInput, in)
	}
	m = m.str(nodeOutput, out).str(nodeName, out).str(nodeOpType, opType)
	for _, a := range attrs {
		m = m.bytes(nodeAttribute, a)
	}
	g.nodes = append(g.nodes, m)
}

func (g *graph) init(name string, dataType int64, dims []int64, raw []byte) string {
	g.inits = append(g.inits, tensor(name, dataType, dims, raw))
	return name
}

func (g *graph) floats(name string, dims []int64, v []float32) string {
	return g.init(name, dataTypeFloat, dims, floatsRaw(v))
}

// scalarF is a deduplicated 0-d float constant.
func (g *graph) scalarF(v float32) string {
	key := fmt.Sprintf("f%08x", math.Float32bits(v))
	if n, ok := g.consts[key]; ok {
		return n
	}
	n := "const_" + key
	g.consts[key] = g.init(n, dataTypeFloat, nil, floatsRaw([]float32{v}))
	return n
}

// ints is a deduplicated 1-d int64 constant (or 0-d with scalar).
func (g *graph) ints(scalar bool, v ...int64) string {
	key := fmt.Sprintf("i%v%v", scalar, v)
	if n, ok := g.consts[key]; ok {
		return n
	}
	n := fmt.Sprintf("const_i%d", len(g.consts))
	var dims []int64
	if !scalar {
		dims = []int64{int64(len(v))}
	}
	g.consts[key] = g.init(n, dataTypeInt64, dims, int64sRaw(v))
	return n
}

package onnxexport

import (
	"math"

	"capsuled/internal/embed/bert"
)

// quantizedMatMul emits x·Wᵀ with W quantised to int8, symmetric per
// output channel, and x quantised dynamically to uint8:
//
//	xq, xs, xz = DynamicQuantizeLinear(x)
//	y = Cast(MatMulInteger(xq, Wq, xz, 0)) · (xs · ws)
func quantizedMatMul(g *graph, x string, l bert.Linear, name string) string {
	wq, scales := quantizeColumns(l)
	wqName := g.init(name+".weight_t_quantized", dataTypeInt8, []int64{int64(l.In), int64(l.Out)}, wq)
	zp := g.init(name+".weight_zero_point", dataTypeInt8, []int64{int64(l.Out)}, make([]byte, l.Out))
	ws := g.floats(name+".weight_scale", []int64{int64(l.Out)}, scales)
	q := g.opN("DynamicQuantizeLinear", []string{x}, 3)
	y := g.op("MatMulInteger", []string{q[0], wqName, q[2], zp})
	yf := g.op("Cast", []string{y}, attrInt("to", dataTypeFloat))
	s := g.op("Mul", []string{q[1], ws})
	return g.op("Mul", []string{yf, s})
}

// quantizeColumns returns Wᵀ ([In, Out], row-major) as int8 bytes and the
// per-output scale max|W[o,:]|/127.
func quantizeColumns(l bert.Linear) ([]byte, []float32) {
	scales := make([]float32, l.Out)
	out := make([]byte, l.In*l.Out)
	for o := range l.Out {
		row := l.W[o*l.In : (o+1)*l.In]
		var m float32
		for _, v := range row {
			m = max(m, float32(math.Abs(float64(v))))
		}
		s := m / 127
		if s == 0 {
			s = 1
		}
		scales[o] = s
		for i, v := range row {
			q := math.Round(float64(v / s))
			q = max(-127, min(127, q))
			out[i*l.Out+o] = byte(int8(q))
		}
	}
	return out, scales
}

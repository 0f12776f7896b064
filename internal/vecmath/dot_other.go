//go:build !amd64

package vecmath

import "unsafe"

// dotBlocks sets s to the eight sums of the first 8·n products of a and b
// (dotBlocksGo; amd64 has an assembly version).
func dotBlocks(a, b *float32, n int, s *[8]float32) {
	*s = [8]float32{}
	dotBlocksGo(unsafe.Slice(a, 8*n), unsafe.Slice(b, 8*n), n, s)
}

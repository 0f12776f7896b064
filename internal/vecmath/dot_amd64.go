package vecmath

// dotBlocks sets s[j] to the sum over the first 8·n elements i ≡ j (mod 8)
// of a[i]·b[i], each product and sum rounded to float32 in order
// (dot_amd64.s; SSE, which every amd64 processor has).
//
//go:noescape
func dotBlocks(a, b *float32, n int, s *[8]float32)

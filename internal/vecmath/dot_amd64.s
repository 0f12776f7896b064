#include "textflag.h"

// func dotBlocks(a, b *float32, n int, s *[8]float32)
// X0 holds sums 0–3, X1 sums 4–7: MULPS then ADDPS per lane, the order and
// rounding of the scalar loop (dotBlocksGo).
TEXT ·dotBlocks(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ s+24(FP), DX
	XORPS X0, X0
	XORPS X1, X1
	TESTQ CX, CX
	JEQ done
loop:
	MOVUPS (SI), X2
	MOVUPS 16(SI), X3
	MOVUPS (DI), X4
	MOVUPS 16(DI), X5
	MULPS X4, X2
	MULPS X5, X3
	ADDPS X2, X0
	ADDPS X3, X1
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	MOVUPS X0, (DX)
	MOVUPS X1, 16(DX)
	RET

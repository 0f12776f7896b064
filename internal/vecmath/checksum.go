package vecmath

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"unsafe"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// littleEndian: float32s in memory are already their stored bytes.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Checksum is the CRC-32C of vectors as stored: each float32's bits,
// little-endian, in order. Stores keep it per item (with the vector count)
// and the retrieval engine compares it with what its files hold, so both
// must compute it the same way: here.
func Checksum(v []float32) uint32 {
	return ChecksumUpdate(0, v)
}

// ChecksumUpdate extends crc, a Checksum of earlier vectors, by v.
func ChecksumUpdate(crc uint32, v []float32) uint32 {
	if littleEndian && len(v) > 0 {
		return crc32.Update(crc, castagnoli, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
	}
	var buf [1024]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/4)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		crc = crc32.Update(crc, castagnoli, buf[:4*n])
		v = v[n:]
	}
	return crc
}

// ChecksumBytes extends crc by vectors already encoded as stored
// (little-endian float32 bits).
func ChecksumBytes(crc uint32, le []byte) uint32 {
	return crc32.Update(crc, castagnoli, le)
}

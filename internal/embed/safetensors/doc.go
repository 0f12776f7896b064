// Package safetensors reads the safetensors checkpoint format: an 8-byte
// little-endian header length, a JSON header naming every tensor with its
// dtype, shape and byte range, then the raw little-endian tensor bytes.
//
// Only what a BERT checkpoint needs is converted: F32, F16 and BF16 to
// float32, and I64/I32 to int64. The whole file is read into memory once;
// tensors are views into it.
package safetensors

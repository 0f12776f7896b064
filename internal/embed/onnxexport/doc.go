// Package onnxexport converts a sentence-transformers BERT checkpoint
// (config.json + model.safetensors, e.g. all-MiniLM-L6-v2) into an ONNX
// model, written by hand as protobuf with protowire: no Python and no ONNX
// library at run time.
//
// The graph (opset 17, IR version 8) is the BERT encoder as Hugging Face
// computes it: Gather for word, position (Shape→Gather→Range) and token-type
// embeddings, LayerNormalization, per layer MatMul+Add projections,
// Reshape/Transpose into heads, scaled MatMul, additive mask (-10000 where
// attention_mask is 0), Softmax, the exact Erf-based GELU, residual
// LayerNormalizations.
//
// Inputs: input_ids, attention_mask, token_type_ids, all int64
// [batch_size, sequence_length]. Outputs:
//
//   - last_hidden_state [batch_size, sequence_length, hidden]: the same
//     output as the public ONNX exports of the model, so a runtime that
//     pools itself can load either;
//   - sentence_embedding [batch_size, hidden]: mean pooling over the
//     attention mask (count clamped at 1e-9) then L2 normalisation
//     (norm clamped at 1e-12), inside the graph, exactly as
//     sentence-transformers' Pooling and Normalize modules do.
//
// With Options.Quantize the 36 dense layers become dynamic int8
// (DynamicQuantizeLinear on activations, per-output-channel symmetric int8
// weights, MatMulInteger, Cast, Mul by the scales): the same pattern
// onnxruntime's quantize_dynamic writes, which ONNX Runtime fuses into
// DynamicQuantizeMatMul. Embeddings, LayerNorms and attention stay fp32.
package onnxexport

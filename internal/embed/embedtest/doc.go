// Package embedtest is the test suite every embedder runs (ort, gobert,
// openaihttp against a fake): dimension, unit norm, determinism, batch
// equals one-by-one, empty input, concurrent use, cancelled context,
// sentence-pair similarity, and agreement with the model's own vectors in
// testdata/reference.jsonl.
//
// reference.jsonl is written by testdata/gen_reference.py, which computes
// all-MiniLM-L6-v2's vectors with a minimal BERT forward pass in numpy
// (float64) straight from model.safetensors, independently of any Go code
// and of ONNX (it can additionally cross-check an exported model.onnx with
// the onnxruntime Python package).
//
// Tests that need the real model or ONNX Runtime find them through the
// environment (CAPSULED_MODEL_DIR, CAPSULED_ONNX_DIR, CAPSULED_ORT_LIB, as
// .ci/fetch-model.sh writes them to .cache/env.sh) and skip with a message
// saying so when they are unset.
package embedtest

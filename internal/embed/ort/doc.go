// Package ort is the default in-process embedder: a BERT sentence encoder
// (all-MiniLM-L6-v2) run by ONNX Runtime through
// github.com/yalue/onnxruntime_go, with the pure-Go wordpiece tokenizer.
//
// It loads either the model.onnx that onnxexport writes (whose
// sentence_embedding output is already mean-pooled and L2-normalised) or a
// public ONNX export that only has last_hidden_state (the pooling and the
// normalisation are then done in Go). Inputs are truncated to 256 word
// pieces, grouped by length and padded per batch to the batch's longest
// sequence. One session is created per Embedder and reused; calls are safe
// from many goroutines, and at most Config.Parallel batches run at once so
// that ONNX Runtime's intra-op threads are not oversubscribed.
//
// ONNX Runtime is a C library: this package needs a cgo build. Without cgo
// New returns ErrNeedsCgo and the caller falls back to gobert. The shared
// library is found by FindLibrary: Config.ORTLibrary, then
// $CAPSULED_ORT_LIB, then well-known places.
//
// The ONNX Runtime environment is process-global (onnxruntime_go keeps it
// in package variables); this package initialises it once, under a lock,
// and never destroys it, so several embedders can share it.
package ort

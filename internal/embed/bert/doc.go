// Package bert holds the shape and the weights of a BERT encoder as a
// sentence-transformers checkpoint stores them (config.json plus
// model.safetensors), for the runtimes that compute with them (gobert) or
// translate them (onnxexport). Linear weights keep PyTorch's [out, in]
// layout.
package bert

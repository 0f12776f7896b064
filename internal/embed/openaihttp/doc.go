// Package openaihttp is an embedder that calls a server speaking the
// OpenAI-compatible embeddings protocol, POST {url}/v1/embeddings, as vLLM,
// Hugging Face TEI, Ollama and OpenAI do.
//
// Texts are sent in batches of Config.BatchSize, each request under its own
// time-out. Returned vectors are checked (count, indices, dimension, finite
// values) and L2-normalised, so every embedder gives unit vectors whatever
// the server does. Requests go through capsuled's one client of
// OpenAI-compatible servers, internal/oai, whose one table maps the
// server's failures (429 with its Retry-After, 503, time-outs, refusals);
// a reply with the wrong count, indices or dimension is KindUpstream (502).
// A cancelled caller context is returned as the context's error.
package openaihttp

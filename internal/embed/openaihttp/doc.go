// Package openaihttp is an embedder that calls a server speaking the
// OpenAI-compatible embeddings protocol, POST {url}/v1/embeddings, as vLLM,
// Hugging Face TEI, Ollama and OpenAI do.
//
// Texts are sent in batches of Config.BatchSize, each request under its own
// time-out. Returned vectors are checked (count, indices, dimension, finite
// values) and L2-normalised, so every embedder gives unit vectors whatever
// the server does. Failures become *domain.Error:
//
//   - KindTimeout (504) when the server does not answer within the time-out
//     or says 504;
//   - KindUnavailable (503) when it cannot be reached, says 503, or rate
//     limits (429, with RetryAfter from its Retry-After header);
//   - KindUpstream (502) for refusals (other 4xx and 5xx, with the server's
//     own message) and for garbage (bad JSON, wrong count or dimension).
//
// A cancelled caller context is returned as the context's error.
package openaihttp

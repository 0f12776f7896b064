// Package oai is capsuled's one client of OpenAI-compatible servers (vLLM,
// llama.cpp's llama-server, Ollama, SGLang, text-embeddings-inference): the
// svc-1 upstream engine, the memory generator, the HTTP embedder and the
// reranker all send their requests through it, so a failure of the server
// means the same thing to each of them.
//
// A Client posts JSON to a path under the server's base URL and reads either
// one JSON reply (PostJSON) or a server-sent-event stream (PostStream, which
// also accepts a plain JSON reply from a server that ignored "stream"). Every
// call is bounded by the configured time-out.
//
// Failures are mapped by one table (Status, Transport) to capsuled's errors,
// which the HTTP layer turns into statuses:
//
//	upstream answer                       capsuled error (status)
//	429                                   rate_limited (429), Retry-After passed on (default 5 s)
//	400, 413, 422                         invalid_request (400): the request, which came from the client, was refused
//	401, 403                              upstream_error (502): the server refused capsuled's key (a configuration fault)
//	404                                   upstream_error (502): the model or route is not served there (configuration)
//	408, 504, call time-out               timeout (504)
//	502, 503, refused, DNS, unreachable   unavailable (503), Retry-After passed on (default 5 s)
//	other 5xx, reset connection           upstream_error (502)
//	reply that is not JSON, error event   upstream_error (502)
//	stream that ends before [DONE]        upstream_error (502), code upstream_truncated
//	the caller's context canceled         the context's error, unchanged
package oai

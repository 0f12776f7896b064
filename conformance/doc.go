// Package conformance checks HTTP traffic against openapi.yaml with
// kin-openapi.
//
// A Validator validates one exchange (a request and its response): the
// response must be documented for the operation, with its status
// (IncludeResponseStatus), headers and body. A request that itself breaks the
// spec is conformant only when the server rejected it with a documented 4xx
// error; a request to no operation of the spec must get a 404 error body.
//
// A Recorder is an http.RoundTripper for tests: it sends every request through
// the real server, validates the exchange, and keeps the operations and
// statuses it saw, so that the suite can fail on any invalid exchange and
// list what the spec documents but no test exercised. When the environment
// variable CAPSULED_RECORD_DIR is set, recorded exchanges are also appended to
// a JSON-lines file there, in the capture format below.
//
// # Capture format
//
// `capsuled conformance validate FILE` reads one JSON object per line:
//
//	{"request":  {"method": "POST", "url": "http://host/v1/chat/completions",
//	              "headers": {"Content-Type": "application/json", "Authorization": "Bearer …"},
//	              "body": "{…}"},
//	 "response": {"status": 200, "headers": {"Content-Type": "application/json"},
//	              "body": "{…}"}}
//
// url is absolute or a path; headers map a name to one value (or an array of
// values); body is the body as a UTF-8 string, or body_base64 holds it
// base64-encoded (for binary uploads). Blank lines and lines starting with
// '#' are skipped. A text/event-stream response body is the raw stream; each
// `data:` event must be a chunk or an error body of the spec, ending with
// `data: [DONE]`.
package conformance

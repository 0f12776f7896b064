// Package app assembles a capsuled server from its configuration: it is the
// only package that imports every backend, and it picks them with a switch
// on the configuration, once, at start-up (store: sqlite | postgres;
// embedder: in-process | OpenAI-compatible HTTP; svc-1 engine: builtin |
// upstream; memory generator).
//
// An App is created with New, serves with Serve (or Run, which also listens
// and shuts down gracefully when its context ends), and releases its
// resources with Close. End-to-end tests start the real App on port 0.
package app

// Package api serves capsuled's HTTP interface: it implements the strict
// server interface generated from openapi.yaml (package gen), translates wire
// types to domain types and back, and holds no business logic.
//
// A request passes, in order: request id → panic recovery → access log and
// metrics → body size limit → route lookup in openapi.yaml → authentication
// and the route's scope (x-required-scope) and allow-lists → validation of the
// request against openapi.yaml (kin-openapi) → the generated strict handler →
// this package's handler methods → the domain services.
//
// Every error leaves through writeError, which maps a domain.Kind to its
// HTTP status and writes the spec's error body; errors that are not
// *domain.Error are logged with the request id and answered with a 500 that
// names only the request id.
package api

// Package domain holds capsuled's core types and its one error type.
//
// Everything else in capsuled imports this package; it imports only the
// standard library. It describes what the service is about — capsules and
// their items and chunks, queries and their wishlist filters, API keys and the
// principals they authenticate, chat requests and completions, memory
// namespaces and memories — without saying how any of it is stored or served.
//
// Wire types generated from openapi.yaml (package gen) never reach this
// package: package api translates between the two.
//
// Errors: every failure that a client should see is a *Error with a Kind
// (which package api maps to an HTTP status in one table), a machine-readable
// Code, a human-readable Message and, where one field is to blame, the Param
// that names it. Anything that is not a *Error is an internal error: its text
// is logged, never sent.
package domain

package domain

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the client can do about it. Package api
// maps each Kind to exactly one HTTP status.
type Kind string

// The kinds of error a client can see.
const (
	KindInvalid         Kind = "invalid_request"        // 400: the request is malformed
	KindUnauthenticated Kind = "unauthenticated"        // 401: missing, unknown, revoked or expired credential
	KindForbidden       Kind = "permission_denied"      // 403: valid credential, but not for this scope or resource
	KindNotFound        Kind = "not_found"              // 404: no such model, capsule, item, key, memory
	KindConflict        Kind = "conflict"               // 409: the resource exists or changed
	KindTooLarge        Kind = "too_large"              // 413: body or upload over its limit
	KindUnsupportedType Kind = "unsupported_media_type" // 415: a body of a Content-Type the operation does not take
	KindUnprocessable   Kind = "unprocessable"          // 422: well-formed but semantically impossible
	KindRateLimited     Kind = "rate_limited"           // 429: over a per-key rate limit
	KindInternal        Kind = "internal"               // 500: a bug or an unexpected failure
	KindNotImplemented  Kind = "not_implemented"        // 501: the operation is not available in this build
	KindUpstream        Kind = "upstream_error"         // 502: an upstream engine refused, reset or sent garbage
	KindUnavailable     Kind = "unavailable"            // 503: an upstream or a dependency cannot be reached
	KindTimeout         Kind = "timeout"                // 504: an upstream did not answer in time
)

// Error is the one error type whose message is meant for the client.
type Error struct {
	Kind    Kind
	Code    string // machine-readable, e.g. "model_not_found"; defaults to Kind
	Message string // human-readable, safe to show
	Param   string // the request field to blame, if any (JSON path such as "messages[2].content")
	// RetryAfter, when positive, is the number of seconds a client should wait (429, 503).
	RetryAfter int
	Err        error // the cause, logged but never sent
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Param != "" {
		msg = e.Param + ": " + msg
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// WireCode is Code, or the Kind when no specific code was set.
func (e *Error) WireCode() string {
	if e.Code != "" {
		return e.Code
	}
	return string(e.Kind)
}

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a 400-class error that blames one request field.
func Invalid(param, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Code: "invalid_value", Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns a 404-class error for a named resource.
func NotFound(what, id string) *Error {
	return &Error{Kind: KindNotFound, Code: what + "_not_found", Message: fmt.Sprintf("%s %q not found", what, id)}
}

// WithCode returns a copy of e with the given code.
func (e *Error) WithCode(code string) *Error {
	c := *e
	c.Code = code
	return &c
}

// WithParam returns a copy of e with the given param.
func (e *Error) WithParam(param string) *Error {
	c := *e
	c.Param = param
	return &c
}

// Wrap returns a copy of e whose cause is err.
func (e *Error) Wrap(err error) *Error {
	c := *e
	c.Err = err
	return &c
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// KindOf returns the Kind of err: the Kind of the *Error in its chain, or
// KindInternal.
func KindOf(err error) Kind {
	if e, ok := AsError(err); ok {
		return e.Kind
	}
	return KindInternal
}

// Sentinel errors that stores and services return (wrapped) for common cases.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("already exists")
)

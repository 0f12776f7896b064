package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"capsuled/internal/domain"
)

// gate is the spec-driven layer in front of the generated handlers: it finds
// the request's operation in openapi.yaml, authenticates the caller, enforces
// the operation's scope and the caller's capsule and namespace allow-lists,
// reads the body within its size limit and validates the request against the
// spec. Every route passes through it, so no handler can forget a check.
func (s *Server) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := info(r.Context())
		route, params, err := s.spec.Router.FindRoute(r)
		if err != nil {
			writeError(w, r, s.log, routeError(r, err))
			return
		}
		op := route.Operation
		ri.Route = op.OperationID

		if err := s.authorize(r, ri, op, params); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if err := s.rateLimit(ri); err != nil {
			writeError(w, r, s.log, err)
			return
		}

		// No body is read, parsed or validated before these checks: the
		// Content-Type must be one the operation takes (415), the size is
		// capped before the first read (413), and JSON may not nest deeper
		// than MaxJSONDepth (400).
		opts := s.validationOptions
		if hasBody(r) && op.RequestBody != nil {
			// (An operation without a request body never reads one.)
			mt, err := checkMediaType(r, op)
			if err != nil {
				writeError(w, r, s.log, err)
				return
			}
			if mt == "multipart/form-data" {
				// Uploads stream to disk in the handler, which enforces their
				// schema and the file's limit; validating here would buffer
				// them in memory. The whole body is capped all the same.
				r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUploadBytes+multipartOverhead)
				o := *opts
				o.ExcludeRequestBody = true
				opts = &o
			} else {
				body, err := s.readBody(w, r, mt)
				if err != nil {
					writeError(w, r, s.log, err)
					return
				}
				ri.Body = body
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		vr := r
		if opts.ExcludeRequestBody {
			// kin-openapi reads the whole body into memory for its security
			// check; an upload's body is the handler's alone.
			c := *r
			c.Body = http.NoBody
			vr = &c
		}
		in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: opts}
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			writeError(w, r, s.log, s.validationError(err))
			return
		}
		if vb, ok := vr.Body.(interface{ ValidatedValue() any }); ok {
			ri.Value = vb.ValidatedValue()
		}
		if ri.Body != nil {
			r.Body = io.NopCloser(bytes.NewReader(ri.Body))
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads a JSON (or JSON Lines) body within MaxBodyBytes and checks
// its nesting depth and number of values.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, mediaType string) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= s.cfg.MaxBodyBytes {
		buf.Grow(int(n) + 1) // +1: ReadFrom needs room to see EOF without growing
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	body := buf.Bytes()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &domain.Error{Kind: domain.KindTooLarge, Code: "body_too_large",
				Message: fmt.Sprintf("request body is over the limit of %d bytes", s.cfg.MaxBodyBytes)}
		}
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "unreadable_body", Message: "could not read the request body"}
	}
	lim := jsonLimits
	if mediaType == "application/x-ndjson" {
		lim = jsonLinesLimits
	}
	switch tooDeep, tooMany := jsonShape(body, lim); {
	case tooDeep:
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "nesting_too_deep",
			Message: fmt.Sprintf("the request body nests arrays and objects more than %d deep", MaxJSONDepth)}
	case tooMany:
		return nil, &domain.Error{Kind: domain.KindTooLarge, Code: "too_many_values",
			Message: fmt.Sprintf("the request body holds more than %d JSON values or %d arrays and objects", lim.values, lim.containers)}
	}
	return body, nil
}

func routeError(r *http.Request, err error) error {
	if errors.Is(err, routers.ErrMethodNotAllowed) || strings.Contains(err.Error(), routers.ErrMethodNotAllowed.Error()) {
		return &domain.Error{Kind: domain.KindNotFound, Code: "method_not_allowed", Message: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)}
	}
	return &domain.Error{Kind: domain.KindNotFound, Code: "route_not_found", Message: fmt.Sprintf("no operation at %s %s", r.Method, r.URL.Path)}
}

// authorize authenticates the request and checks the operation's scope and
// the allow-lists for the capsule and namespace it addresses.
func (s *Server) authorize(r *http.Request, ri *reqInfo, op *openapi3.Operation, params map[string]string) error {
	scope := requiredScope(op)
	if scope == "" {
		return nil
	}
	cred, err := bearer(r)
	if err != nil {
		return err
	}
	p, err := s.auth.Authenticate(r.Context(), cred)
	if err != nil {
		return err
	}
	ri.Principal = p
	if scope != "any" && !p.Has(domain.Scope(scope)) {
		return &domain.Error{Kind: domain.KindForbidden, Code: "missing_scope",
			Message: fmt.Sprintf("this operation needs the %s scope", scope)}
	}
	ri.Capsule = params["capsule"]
	if op.OperationID == "queryCapsuleByHost" {
		ri.Capsule = s.capsuleFromHost(r.Host)
	}
	if ri.Capsule != "" && !p.CanCapsule(ri.Capsule) {
		return &domain.Error{Kind: domain.KindForbidden, Code: "capsule_not_allowed",
			Message: fmt.Sprintf("this credential may not use capsule %q", ri.Capsule)}
	}
	ns, inPath := params["namespace"]
	if !inPath && hasNamespaceParam(op) {
		ns = r.URL.Query().Get("namespace")
		if ns == "" {
			ns = domain.GlobalNamespace
		}
	}
	if inPath || hasNamespaceParam(op) {
		ri.Namespace = ns
		if !p.CanNamespace(ns) {
			return &domain.Error{Kind: domain.KindForbidden, Code: "namespace_not_allowed",
				Message: fmt.Sprintf("this credential may not use namespace %q", ns)}
		}
	}
	return nil
}

// rateLimit admits the request under its key's rate limit, or returns a 429
// with the seconds to wait.
func (s *Server) rateLimit(ri *reqInfo) error {
	if s.limiter == nil || ri.Principal == nil {
		return nil
	}
	ok, wait := s.limiter.Allow(ri.Principal.KeyID)
	if ok {
		return nil
	}
	secs := int(math.Ceil(wait.Seconds()))
	return &domain.Error{Kind: domain.KindRateLimited, Code: "rate_limited", RetryAfter: secs,
		Message: fmt.Sprintf("this key is over its rate limit; retry in %d s", secs)}
}

// bearer extracts the credential of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", &domain.Error{Kind: domain.KindUnauthenticated, Code: "missing_credential",
			Message: "missing credential: send Authorization: Bearer <API key or access token>"}
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(cred) == "" {
		return "", &domain.Error{Kind: domain.KindUnauthenticated, Code: "invalid_authorization_header",
			Message: "the Authorization header must be: Bearer <API key or access token>"}
	}
	return strings.TrimSpace(cred), nil
}

// capsuleFromHost returns the capsule named by a host of the form
// <capsule>.<suffix>, or "" when the host does not match the configured suffix.
func (s *Server) capsuleFromHost(host string) string {
	suffix := s.cfg.CapsuleHostSuffix
	if suffix == "" {
		return ""
	}
	host = strings.ToLower(host)
	suffix = strings.ToLower(strings.TrimPrefix(suffix, "."))
	if !strings.HasSuffix(host, "."+suffix) {
		// Compare without ports when only one side has one.
		h, _, _ := strings.Cut(host, ":")
		sfx, _, _ := strings.Cut(suffix, ":")
		if !strings.HasSuffix(h, "."+sfx) {
			return ""
		}
		host, suffix = h, sfx
	}
	name := strings.TrimSuffix(host, "."+suffix)
	if domain.ValidateCapsuleName(name) != nil {
		return ""
	}
	return name
}

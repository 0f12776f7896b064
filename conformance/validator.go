package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"capsuled/api"
)

// Unmatched is the operation id recorded for a request that matches no
// operation of the spec.
const Unmatched = "(no operation)"

// Validator validates exchanges against openapi.yaml.
type Validator struct {
	spec *api.Spec
	opts *openapi3filter.Options
	// errorSchema validates the error body of unmatched routes.
	errorSchema *openapi3.Schema
}

// NewValidator loads the embedded openapi.yaml.
func NewValidator(ctx context.Context) (*Validator, error) {
	spec, err := api.LoadSpec(ctx)
	if err != nil {
		return nil, err
	}
	es := spec.Doc.Components.Schemas["ErrorResponse"]
	if es == nil || es.Value == nil {
		return nil, errors.New("openapi.yaml has no ErrorResponse schema")
	}
	return &Validator{
		spec: spec,
		opts: &openapi3filter.Options{
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
			IncludeResponseStatus: true,
			SkipSettingDefaults:   true,
			// As the server does: formatting each schema error's schema
			// and value costs time quadratic in a hostile body's depth.
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
		},
		errorSchema: es.Value,
	}, nil
}

// Exchange is one request and its response, as captured.
type Exchange struct {
	Request  CapturedRequest  `json:"request"`
	Response CapturedResponse `json:"response"`
}

// CapturedRequest is a request of the capture format.
type CapturedRequest struct {
	Method     string  `json:"method"`
	URL        string  `json:"url"`
	Headers    Headers `json:"headers,omitempty"`
	Body       string  `json:"body,omitempty"`
	BodyBase64 string  `json:"body_base64,omitempty"`
}

// CapturedResponse is a response of the capture format.
type CapturedResponse struct {
	Status     int     `json:"status"`
	Headers    Headers `json:"headers,omitempty"`
	Body       string  `json:"body,omitempty"`
	BodyBase64 string  `json:"body_base64,omitempty"`
}

// Headers maps a header name to its values; in JSON a single value may be a
// string.
type Headers map[string][]string

// UnmarshalJSON accepts a string or an array of strings per header.
func (h *Headers) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*h = Headers{}
	for k, v := range raw {
		var one string
		if err := json.Unmarshal(v, &one); err == nil {
			(*h)[k] = []string{one}
			continue
		}
		var many []string
		if err := json.Unmarshal(v, &many); err != nil {
			return fmt.Errorf("header %s: want a string or an array of strings", k)
		}
		(*h)[k] = many
	}
	return nil
}

func (h Headers) http() http.Header {
	out := http.Header{}
	for k, vs := range h {
		for _, v := range vs {
			out.Add(k, v)
		}
	}
	return out
}

func body(text, b64 string) ([]byte, error) {
	if b64 != "" {
		return base64.StdEncoding.DecodeString(b64)
	}
	return []byte(text), nil
}

// Result says which operation and status an exchange exercised.
type Result struct {
	Operation string // operation id, or Unmatched
	Status    int
	// RequestInvalid is set when the request broke the spec (and the server
	// rightly rejected it).
	RequestInvalid bool
}

// Validate checks one exchange. The error names the rule that failed.
func (v *Validator) Validate(ctx context.Context, ex Exchange) (Result, error) {
	reqBody, err := body(ex.Request.Body, ex.Request.BodyBase64)
	if err != nil {
		return Result{}, fmt.Errorf("request body_base64: %w", err)
	}
	respBody, err := body(ex.Response.Body, ex.Response.BodyBase64)
	if err != nil {
		return Result{}, fmt.Errorf("response body_base64: %w", err)
	}
	u, err := url.Parse(ex.Request.URL)
	if err != nil {
		return Result{}, fmt.Errorf("request url: %w", err)
	}
	if u.Host == "" {
		u.Scheme, u.Host = "http", "localhost"
	}
	req, err := http.NewRequestWithContext(ctx, ex.Request.Method, u.String(), bytes.NewReader(reqBody))
	if err != nil {
		return Result{}, fmt.Errorf("request: %w", err)
	}
	req.Header = ex.Request.Headers.http()
	status := ex.Response.Status
	res := Result{Operation: Unmatched, Status: status}

	route, params, err := v.spec.Router.FindRoute(req)
	if err != nil {
		var re *routers.RouteError
		if !errors.As(err, &re) {
			return res, fmt.Errorf("%s %s: find route: %w", req.Method, u.Path, err)
		}
		if status != http.StatusNotFound {
			return res, fmt.Errorf("%s %s matches no operation of the spec, so its response must be 404, got %d", req.Method, u.Path, status)
		}
		return res, v.checkErrorBody(ex.Response.Headers.http(), respBody)
	}
	res.Operation = route.Operation.OperationID

	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: v.opts}
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil {
		res.RequestInvalid = true
		if status < 400 || status >= 500 {
			return res, fmt.Errorf("%s: the request breaks the spec (%v) but the server answered %d instead of rejecting it with a 4xx error", res.Operation, firstLine(reqErr), status)
		}
	}
	in.Request.Body = io.NopCloser(bytes.NewReader(reqBody))
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 ex.Response.Headers.http(),
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options:                v.opts,
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return res, fmt.Errorf("%s: response %d breaks the spec: %v", res.Operation, status, firstLine(err))
	}
	if status >= 400 {
		if err := v.checkErrorBody(ex.Response.Headers.http(), respBody); err != nil {
			return res, fmt.Errorf("%s: %w", res.Operation, err)
		}
	}
	return res, nil
}

// checkErrorBody requires a JSON ErrorResponse body.
func (v *Validator) checkErrorBody(h http.Header, b []byte) error {
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error response has Content-Type %q, want application/json", ct)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("error response body is not JSON: %w", err)
	}
	if err := v.errorSchema.VisitJSON(doc); err != nil {
		return fmt.Errorf("error response body is not an ErrorResponse: %v", firstLine(err))
	}
	return nil
}

// ValidateCapture validates every exchange of a capture (one JSON object per
// line) and returns how many it validated; it stops at the first invalid one.
func (v *Validator) ValidateCapture(ctx context.Context, r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	n, line := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var ex Exchange
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ex); err != nil {
			return n, fmt.Errorf("line %d: not an exchange: %w", line, err)
		}
		if ex.Request.Method == "" || ex.Request.URL == "" || ex.Response.Status == 0 {
			return n, fmt.Errorf("line %d: an exchange needs request.method, request.url and response.status", line)
		}
		if _, err := v.Validate(ctx, ex); err != nil {
			return n, fmt.Errorf("line %d: %w", line, err)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("line %d: %w", line+1, err)
	}
	return n, nil
}

// Documented lists every operation id and response status of the spec, as
// "operationId status" strings, sorted.
func (v *Validator) Documented() []string {
	var out []string
	for _, item := range v.spec.Doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code := range op.Responses.Map() {
				if _, err := strconv.Atoi(code); err == nil {
					out = append(out, op.OperationID+" "+code)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

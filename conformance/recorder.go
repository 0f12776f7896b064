package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Recorder is an http.RoundTripper that validates every exchange it carries.
type Recorder struct {
	next      http.RoundTripper
	validator *Validator

	mu       sync.Mutex
	failures []string
	seen     map[string]int // "operationId status" → count
	file     *os.File
}

// NewRecorder returns a Recorder over next (http.DefaultTransport if nil).
// With CAPSULED_RECORD_DIR set, exchanges are appended to a file there named
// after name.
func NewRecorder(v *Validator, next http.RoundTripper, name string) (*Recorder, error) {
	if next == nil {
		next = http.DefaultTransport
	}
	r := &Recorder{next: next, validator: v, seen: map[string]int{}}
	if dir := os.Getenv("CAPSULED_RECORD_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, name+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		r.file = f
	}
	return r, nil
}

// RoundTrip sends req, reads the whole response, validates the exchange and
// returns the response with its body intact.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))

	ex := Exchange{
		Request:  CapturedRequest{Method: req.Method, URL: req.URL.String(), Headers: Headers(req.Header.Clone())},
		Response: CapturedResponse{Status: resp.StatusCode, Headers: Headers(resp.Header.Clone())},
	}
	if req.Host != "" && req.Host != req.URL.Host {
		ex.Request.Headers["Host"] = []string{req.Host}
	}
	setBody(&ex.Request.Body, &ex.Request.BodyBase64, reqBody)
	setBody(&ex.Response.Body, &ex.Response.BodyBase64, respBody)
	res, verr := r.validator.Validate(context.WithoutCancel(req.Context()), ex)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[res.Operation+" "+strconv.Itoa(res.Status)]++
	if verr != nil {
		r.failures = append(r.failures, fmt.Sprintf("%s %s → %d: %v", req.Method, req.URL.Path, resp.StatusCode, verr))
	}
	if r.file != nil {
		if line, err := json.Marshal(ex); err == nil {
			r.file.Write(append(line, '\n'))
		}
	}
	return resp, nil
}

func setBody(text, b64 *string, b []byte) {
	if utf8.Valid(b) {
		*text = string(b)
		return
	}
	*b64 = base64.StdEncoding.EncodeToString(b)
}

// Client returns an http.Client that sends through r.
func (r *Recorder) Client() *http.Client { return &http.Client{Transport: r} }

// Failures lists the invalid exchanges so far.
func (r *Recorder) Failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failures...)
}

// Seen lists the "operationId status" pairs exercised so far, sorted.
func (r *Recorder) Seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.seen))
	for k := range r.seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Uncovered lists the documented "operationId status" pairs that no exchange
// exercised.
func (r *Recorder) Uncovered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.validator.Documented() {
		if r.seen[d] == 0 {
			out = append(out, d)
		}
	}
	return out
}

// Close closes the recording file, if any.
func (r *Recorder) Close() error {
	if r.file != nil {
		return r.file.Close()
	}
	return nil
}

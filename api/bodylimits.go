package api

import (
	"fmt"
	"mime"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"

	"capsuled/internal/domain"
)

// Limits on request bodies that hold before anything parses them (see
// openapi.yaml, "Request bodies", and docs/reliability.md).
const (
	// MaxJSONDepth is how deep arrays and objects may nest in a JSON body.
	// Validation and decoding cost grows with depth; no operation needs more
	// than a handful of levels, and item metadata is free-form but shallow.
	MaxJSONDepth = 64
	// MaxJSONValues is how many values (array elements, object members and
	// containers) a JSON body may hold: decoding and validating cost tens
	// of bytes and several allocations per value, so this, and not the byte
	// size, bounds their cost. The largest array of the spec
	// (allowed_token_ids) has 65,536 elements.
	MaxJSONValues = 1 << 17
	// MaxJSONLinesValues is the same for a JSON Lines body (a memory
	// import): 4 MiB of full exported records hold about 200,000 values, and
	// their schema has no oneOf, which costs the most per value.
	MaxJSONLinesValues = 1 << 18
	// MaxJSONContainers and MaxJSONLinesContainers bound the arrays and
	// objects among those values: a container under a oneOf is copied
	// once per variant by the validator, so nested containers cost the
	// most. A chat of 1,024 messages with content parts holds about 6,000;
	// a 4 MiB import of full records about 30,000.
	MaxJSONContainers      = 1 << 14
	MaxJSONLinesContainers = 1 << 16
	// maxErrorMessage and maxErrorParam cap what a validation error echoes
	// back, whatever the body held.
	maxErrorMessage = 512
	maxErrorParam   = 256
	// multipartOverhead is what a multipart body may carry beyond its file:
	// the other form fields (maxFormParts of at most maxFormField) and the
	// part headers.
	multipartOverhead = maxFormParts*maxFormField + 64<<10
)

// hasBody reports whether the request carries a body (or may: a chunked body
// of unknown length).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// checkMediaType returns the body's media type when the operation takes it,
// or a 415 naming the types it takes.
func checkMediaType(r *http.Request, op *openapi3.Operation) (string, error) {
	rb := op.RequestBody
	if rb == nil || rb.Value == nil {
		return "", nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && rb.Value.Content.Get(mt) != nil {
		return mt, nil
	}
	want := "application/json"
	switch {
	case rb.Value.Content.Get("application/x-ndjson") != nil && rb.Value.Content.Get("application/json") == nil:
		want = "application/x-ndjson"
	case rb.Value.Content.Get("multipart/form-data") != nil:
		want = "application/json or multipart/form-data"
	}
	got := ct
	if got == "" {
		got = "no Content-Type"
	}
	if len(got) > 100 {
		got = got[:100] + "…"
	}
	return "", &domain.Error{Kind: domain.KindUnsupportedType, Code: "unsupported_media_type",
		Message: fmt.Sprintf("unsupported Content-Type (%s): send %s", got, want)}
}

// shapeLimits are the limits jsonShape checks.
type shapeLimits struct{ depth, values, containers int }

var (
	jsonLimits      = shapeLimits{MaxJSONDepth, MaxJSONValues, MaxJSONContainers}
	jsonLinesLimits = shapeLimits{MaxJSONDepth, MaxJSONLinesValues, MaxJSONLinesContainers}
)

// jsonShape scans b (one JSON value or JSON Lines) for how deep arrays and
// objects nest, about how many values it holds (commas and openers) and how
// many of them are containers, stopping as soon as one is over its limit. It
// scans bytes, skipping strings, so it costs one pass and no allocation
// whatever b holds; malformed JSON is left to the parser.
func jsonShape(b []byte, lim shapeLimits) (tooDeep, tooMany bool) {
	depth, values, containers := 0, 1, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			values++
			containers++
			if depth > lim.depth {
				return true, false
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ',', '\n':
			values++
		}
		if values > lim.values || containers > lim.containers {
			return false, true
		}
	}
	return false, false
}

// capText shortens s to at most n bytes (on a rune boundary), marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

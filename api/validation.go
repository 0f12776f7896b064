package api

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"capsuled/internal/domain"
)

// unsupportedProperty finds the property name in kin-openapi's reason for an
// additionalProperties failure, so that the error names the unknown field.
var unsupportedProperty = regexp.MustCompile(`^property "(.+)" is unsupported$`)

// newValidationOptions are the kin-openapi options for request validation.
// Authentication is done by gate itself; defaults are applied by the
// conversions, so the body stays as the client sent it.
func newValidationOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true,
		// Without this every schema error formats its schema and value,
		// and a failed oneOf formats all its branches' errors: quadratic in
		// the body's depth. The reason and the JSON pointer are all the
		// error body uses.
		SchemaValidationOptions: schemaOptions,
		// The body is decoded once, by the validation; the chat operations
		// convert the value it decoded (reqInfo.Value).
		KeepValidatedValue: true,
	}
}

// schemaOptions are the schema validation options of every validation here.
var schemaOptions = []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()}

// validationError turns a kin-openapi request validation error into a 400
// that names the offending field, its message and param capped in length.
func (s *Server) validationError(err error) error {
	e := s.validationErrorFull(err)
	if de, ok := domain.AsError(e); ok {
		de.Message = capText(de.Message, maxErrorMessage)
		de.Param = capText(de.Param, maxErrorParam)
	}
	return e
}

func (s *Server) validationErrorFull(err error) error {
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return domain.Errorf(domain.KindInvalid, "invalid request: %v", err).WithCode("invalid_request")
	}
	var se *openapi3.SchemaError
	switch {
	case errors.As(re.Err, &se):
		se, ptr := refine(se)
		if m := unsupportedProperty.FindStringSubmatch(se.Reason); m != nil {
			ptr = append(ptr, m[1])
		}
		param := pointerToParam(ptr)
		if re.Parameter != nil {
			param = joinParam(re.Parameter.Name, param)
		}
		return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_value", Param: param, Message: schemaMessage(param, se)}
	case re.Parameter != nil:
		return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_value", Param: re.Parameter.Name, Message: cleanReason(re)}
	case re.RequestBody != nil:
		var pe *openapi3filter.ParseError
		if errors.As(re.Err, &pe) || strings.Contains(re.Error(), "failed to decode") {
			return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_json", Message: "the request body is not valid JSON: " + firstLine(re.Err)}
		}
		if errors.Is(re.Err, openapi3filter.ErrInvalidRequired) || strings.Contains(re.Error(), "value is required") {
			return &domain.Error{Kind: domain.KindInvalid, Code: "missing_body", Message: "a request body is required"}
		}
		return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_body", Message: cleanReason(re)}
	default:
		return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_request", Message: cleanReason(re)}
	}
}

// refine descends into a failed oneOf: when exactly one variant claims the
// value (by its role or type property, or by JSON type), the error is that
// variant's own error, which names the precise field. It returns the error
// and the full JSON pointer of the offending value.
func refine(se *openapi3.SchemaError) (*openapi3.SchemaError, []string) {
	ptr := se.JSONPointer()
	for depth := 0; depth < 8; depth++ {
		if se.SchemaField != "oneOf" || se.Schema == nil {
			break
		}
		v := claimant(se.Schema.OneOf, se.Value)
		if v == nil {
			break
		}
		var inner *openapi3.SchemaError
		if err := v.VisitJSON(se.Value, schemaOptions...); err == nil || !errors.As(err, &inner) {
			break
		}
		ptr = append(ptr, inner.JSONPointer()...)
		se = inner
	}
	return se, ptr
}

// claimant returns the one variant that claims value, or nil.
func claimant(variants openapi3.SchemaRefs, value any) *openapi3.Schema {
	var found *openapi3.Schema
	n := 0
	for _, ref := range variants {
		v := ref.Value
		if v == nil || !claims(v, value) {
			continue
		}
		found = v
		n++
	}
	if n != 1 {
		return nil
	}
	return found
}

func claims(v *openapi3.Schema, value any) bool {
	if !jsonTypeMatches(v, value) {
		return false
	}
	obj, ok := value.(map[string]any)
	if !ok {
		return true
	}
	for _, key := range []string{"role", "type"} {
		prop, has := v.Properties[key]
		got, sent := obj[key]
		if !has || !sent || prop.Value == nil {
			continue
		}
		return prop.Value.VisitJSON(got, schemaOptions...) == nil
	}
	return true
}

func jsonTypeMatches(v *openapi3.Schema, value any) bool {
	if v.Type == nil || len(v.Type.Slice()) == 0 {
		return true
	}
	switch value.(type) {
	case map[string]any:
		return v.Type.Is("object")
	case []any:
		return v.Type.Is("array")
	case string:
		return v.Type.Is("string")
	case bool:
		return v.Type.Is("boolean")
	case float64, int, int64:
		return v.Type.Is("number") || v.Type.Is("integer")
	case nil:
		return v.Nullable
	}
	return true
}

// pointerToParam renders ["messages","2","content"] as messages[2].content.
func pointerToParam(ptr []string) string {
	var b strings.Builder
	for _, seg := range ptr {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

func joinParam(a, b string) string {
	switch {
	case b == "":
		return a
	case strings.HasPrefix(b, "["):
		return a + b
	default:
		return a + "." + b
	}
}

func schemaMessage(param string, se *openapi3.SchemaError) string {
	reason := se.Reason
	if se.SchemaField == "additionalProperties" && reason == "" {
		reason = "unknown field"
	}
	where := param
	if where == "" {
		where = "request body"
	}
	msg := fmt.Sprintf("%s: %s", where, reason)
	if strings.HasPrefix(param, "tools") {
		msg += ". tools takes at most one stub, {\"type\": \"function\", \"function\": {\"name\": \"dummy\"}}, whose function has only a name: the tools and their behaviour come from the system prompt, so description and parameters are not allowed"
	}
	if param == "" && se.SchemaField == "oneOf" {
		msg += " (the variant is chosen by role or type; see the spec)"
	}
	return msg
}

func cleanReason(re *openapi3filter.RequestError) string {
	if re.Err != nil {
		if re.Reason != "" {
			return re.Reason + ": " + firstLine(re.Err)
		}
		return firstLine(re.Err)
	}
	return re.Reason
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

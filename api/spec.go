package api

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"capsuled/gen"
)

// Spec is openapi.yaml, loaded from the copy embedded in gen, with a router
// that finds the operation of a request.
type Spec struct {
	Doc    *openapi3.T
	Router routers.Router
	// YAML is openapi.yaml as written, to serve.
	YAML []byte
}

// LoadSpec loads and validates the embedded openapi.yaml. Servers are dropped
// for routing, so that a request's path alone selects its operation whatever
// host and base it arrived on.
func LoadSpec(ctx context.Context) (*Spec, error) {
	doc, err := openapi3.NewLoader().LoadFromData(gen.OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("load embedded openapi.yaml: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapi.yaml is invalid: %w", err)
	}
	doc.Servers = nil
	for _, item := range doc.Paths.Map() {
		item.Servers = nil
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route openapi.yaml: %w", err)
	}
	return &Spec{Doc: doc, Router: router, YAML: gen.OpenAPIYAML}, nil
}

// requiredScope is the operation's x-required-scope: a scope name, "any" (any
// valid credential) or "" (public: the operation has empty security).
func requiredScope(op *openapi3.Operation) string {
	if op.Security != nil && len(*op.Security) == 0 {
		return ""
	}
	s, _ := op.Extensions["x-required-scope"].(string)
	if s == "" {
		return "any"
	}
	return s
}

// hasNamespaceParam reports whether the operation takes the namespace query parameter.
func hasNamespaceParam(op *openapi3.Operation) bool {
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == "query" && p.Value.Name == "namespace" {
			return true
		}
	}
	return false
}

// Package gen holds the code generated from openapi.yaml by oapi-codegen: the
// wire models, the strict server interface on net/http, a Go client and the
// embedded spec. Never edit it by hand; run `go generate ./...`.
//
// OpenAPIYAML is a verbatim copy of openapi.yaml (copied by go generate), so
// that the server validates against, and serves, the spec exactly as written;
// oapi-codegen's own embedded copy (GetSwagger) is re-serialised with
// capitalised operation ids.
package gen

import _ "embed"

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=../oapi-codegen.yaml ../openapi.yaml
//go:generate cp ../openapi.yaml openapi.yaml

// OpenAPIYAML is openapi.yaml as written.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// Package gen holds the code generated from openapi.yaml by oapi-codegen: the
// wire models, the strict server interface on net/http, a Go client and the
// embedded spec. Never edit it by hand; run `go generate ./...`.
package gen

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=../oapi-codegen.yaml ../openapi.yaml

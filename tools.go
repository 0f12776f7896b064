//go:build tools

// Package tools pins the code generator that go generate runs, so that
// `go generate ./...` reproduces gen/ byte for byte with the version in go.mod.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
)

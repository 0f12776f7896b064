package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/domain"
)

// tools are the handlers of one MCP server. fixed, when set, is the
// principal of every call; otherwise each call's comes from its request.
type tools struct {
	srv   *Server
	fixed *domain.Principal
}

// principal is who a call acts for, with the scope the tool needs checked
// again (the tool list already hides what a credential may not use).
func (t *tools) principal(extra *mcp.RequestExtra, scope domain.Scope) (*domain.Principal, error) {
	p := t.fixed
	if p == nil && extra != nil {
		p = principalOf(extra.TokenInfo)
	}
	if p == nil {
		return nil, &domain.Error{Kind: domain.KindUnauthenticated, Code: "missing_credential", Message: "this call carries no credential"}
	}
	if !p.Has(scope) {
		return nil, &domain.Error{Kind: domain.KindForbidden, Code: "missing_scope",
			Message: fmt.Sprintf("this tool needs the %s scope", scope)}
	}
	return p, nil
}

// toolError is the error a tool returns to the client: the message of a
// *domain.Error with its code, or "internal error" (the cause is logged).
func (t *tools) toolError(ctx context.Context, tool string, err error) error {
	if e, ok := domain.AsError(err); ok && e.Kind != domain.KindInternal {
		return errors.New(clientMessage(e))
	}
	switch {
	case errors.Is(err, context.Canceled):
		return errors.New("canceled: the request was canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("timeout: the request timed out")
	}
	t.srv.log.ErrorContext(ctx, "mcp: tool failed", "tool", tool, "err", err)
	return errors.New("internal error: the server logged the cause")
}

// clientMessage is an error's text for the client: "code: param: message",
// without the cause of a *domain.Error (which is only logged).
func clientMessage(err error) string {
	e, ok := domain.AsError(err)
	if !ok {
		return err.Error()
	}
	msg := e.Message
	if e.Param != "" {
		msg = e.Param + ": " + msg
	}
	return e.WireCode() + ": " + msg
}

// inputSchema is T's inferred JSON schema, adjusted by patch (bounds, enums
// and formats that Go types cannot carry).
func inputSchema[T any](patch func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	if patch != nil {
		patch(s.Properties)
	}
	return s
}

func intRange(lo, hi float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &lo, &hi }
}

func boolPtr(b bool) *bool { return &b }

// readOnlyAnn, additive and destructive are the tools' annotations.
var (
	readOnlyAnn = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}
	additive    = &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)}
	destructive = &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
)

// text is a tool result whose readable content is s (the structured
// content is the handler's output).
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// oneLine shortens s to at most n runes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

package app

import (
	"net/http"

	"capsuled/api"
	"capsuled/internal/mcpserver"
)

// newMCP builds the MCP server over the same services, authenticator and
// rate limiter as the REST API.
func (a *App) newMCP(capsules api.Capsules, mem api.Memory, limiter mcpserver.RateLimiter) *mcpserver.Server {
	deps := mcpserver.Deps{Auth: a.auth, Limiter: limiter, Log: a.log}
	if capsules != nil {
		deps.Capsules = capsules
	}
	// The memory tools need selection (recall), which the REST API reaches
	// only through memory chat: they are on when the service offers it.
	if m, ok := mem.(mcpserver.Memory); ok && m != nil {
		deps.Memory = m
	}
	return mcpserver.New(mcpserver.Config{Version: a.cfg.Version, MaxBodyBytes: a.cfg.MaxBodyBytes}, deps)
}

// mountMCP serves MCP's streamable HTTP transport (h) at /mcp in front of
// next.
func mountMCP(h, next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/", next)
	return mux
}

// MCP is the app's MCP server (for capsuled mcp --data, over stdio).
func (a *App) MCP() *mcpserver.Server { return a.mcp }

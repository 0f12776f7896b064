package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

// Authenticator turns a bearer credential (API key or access token) into
// the principal it acts for.
type Authenticator interface {
	Authenticate(ctx context.Context, credential string) (*domain.Principal, error)
}

// Capsules is what the tools need from the capsule service.
type Capsules interface {
	ListCapsules(ctx context.Context) ([]domain.Capsule, error)
	ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) (items []domain.Item, next string, err error)
	GetItem(ctx context.Context, capsule, id string) (domain.Item, error)
	ItemText(ctx context.Context, capsule, id string) (domain.Item, string, error)
	Query(ctx context.Context, capsule string, q domain.Query) ([]domain.Hit, error)
}

// Memory is what the tools need from the memory service.
type Memory interface {
	Add(ctx context.Context, ns string, in memory.NewMemory) (domain.Memory, error)
	Select(ctx context.Context, q memory.Query) (memory.Selection, error)
	Delete(ctx context.Context, ns, id string) error
}

// RateLimiter admits requests per key (the REST layer's limiter).
type RateLimiter interface {
	Allow(key string) (ok bool, retryAfter time.Duration)
}

// Config holds the server's settings.
type Config struct {
	// Name and Version identify the server to clients. Defaults "capsuled"
	// and "dev".
	Name    string
	Version string
	// MaxBodyBytes limits one HTTP request body. Default 4 MiB.
	MaxBodyBytes int64
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = "capsuled"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	return c
}

// Deps are the services behind the tools. A nil Capsules or Memory leaves
// out its tools; Auth is needed only by Handler.
type Deps struct {
	Auth     Authenticator
	Capsules Capsules
	Memory   Memory
	Limiter  RateLimiter
	Log      *slog.Logger
}

// Server builds MCP servers over the capsule and memory services.
type Server struct {
	cfg      Config
	auth     Authenticator
	capsules Capsules
	memory   Memory
	limiter  RateLimiter
	log      *slog.Logger
	schemas  *mcp.SchemaCache
	// shared are the HTTP servers, one per tool set, built once: the
	// principal of each call comes from its request.
	shared [toolSetCount]*mcp.Server
}

// New returns a Server over deps.
func New(cfg Config, deps Deps) *Server {
	s := &Server{
		cfg:      cfg.WithDefaults(),
		auth:     deps.Auth,
		capsules: deps.Capsules,
		memory:   deps.Memory,
		limiter:  deps.Limiter,
		log:      deps.Log,
		schemas:  mcp.NewSchemaCache(),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	for set := range toolSet(toolSetCount) {
		s.shared[set] = s.build(set, nil, false)
	}
	return s
}

// toolSet says which groups of tools a server offers: a bit per scope.
type toolSet uint8

const (
	capsuleTools toolSet = 1 << iota // search, text_search, read, list_capsules, capsule resources
	memoryTools                      // remember, recall, forget
	toolSetCount = 1 << iota
)

// toolsFor is the tool set a principal may use, within what the services
// offer.
func (s *Server) toolsFor(p *domain.Principal) toolSet {
	var set toolSet
	if s.capsules != nil && p.Has(domain.ScopeCapsulesRead) {
		set |= capsuleTools
	}
	if s.memory != nil && p.Has(domain.ScopeMemory) {
		set |= memoryTools
	}
	return set
}

// build returns an MCP server with the tools of set. fixed, when set, is the
// principal of every call (stdio); otherwise each call's principal comes
// from its HTTP request's credential. readOnly leaves out the tools that
// write (remember, forget).
func (s *Server) build(set toolSet, fixed *domain.Principal, readOnly bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: s.cfg.Name, Title: "capsuled: capsules and memory", Version: s.cfg.Version},
		&mcp.ServerOptions{
			Instructions: instructions(set),
			Logger:       s.log,
			SchemaCache:  s.schemas,
			// Lists and reads depend on the credential and on data that
			// changes: clients may cache them for themselves, briefly.
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope, c.TTLMs = "private", 0 },
		})
	t := &tools{srv: s, fixed: fixed}
	if set&capsuleTools != 0 {
		t.addCapsuleTools(srv)
		t.addResources(srv)
	}
	if set&memoryTools != 0 {
		t.addMemoryTools(srv, readOnly)
	}
	return srv
}

func instructions(set toolSet) string {
	s := "capsuled serves search over document capsules and long-term memory."
	if set&capsuleTools != 0 {
		s += " Use search for questions in natural language and text_search for exact words, names and phrases;" +
			" both return item ids with snippets. Use read to get an item's full text by id. list_capsules names the capsules you may search."
	}
	if set&memoryTools != 0 {
		s += " recall returns what is remembered in a namespace about a query, within a token budget; remember stores a note; forget deletes one by id."
	}
	return s
}

// Handler serves MCP over the streamable HTTP transport, statelessly, to
// callers with a bearer API key or access token. A credential without the
// capsules:read or memory scope is refused with 403; a key over its rate
// limit with 429.
func (s *Server) Handler() http.Handler {
	if s.auth == nil {
		panic("mcpserver: Handler needs an Authenticator")
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p := principalOf(sdkauth.TokenInfoFromContext(r.Context()))
		if p == nil {
			return nil
		}
		return s.shared[s.toolsFor(p)]
	}, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              s.log,
		MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
		// The SDK refuses a non-loopback Host on a loopback connection
		// against DNS rebinding, which would also refuse a reverse proxy on
		// the same machine. Every request here carries a bearer credential,
		// which a rebound page cannot send, so the check guards nothing.
		DisableLocalhostProtection: true,
	})
	gate := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(sdkauth.TokenInfoFromContext(r.Context()))
		if p == nil || s.toolsFor(p) == 0 {
			writeError(w, http.StatusForbidden, "permission_error", "missing_scope",
				"MCP needs a credential with the capsules:read or memory scope")
			return
		}
		if s.limiter != nil {
			if ok, wait := s.limiter.Allow(p.KeyID); !ok {
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				writeError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limited",
					fmt.Sprintf("this key is over its rate limit; retry in %d s", secs))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
	authed := sdkauth.RequireBearerToken(s.verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(gate)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authed.ServeHTTP(&challenger{ResponseWriter: w}, r)
	})
}

// challenger adds the WWW-Authenticate challenge to a 401, as the REST API
// does (the SDK's middleware sends one only with OAuth metadata).
type challenger struct {
	http.ResponseWriter
}

func (c *challenger) WriteHeader(status int) {
	if status == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="capsuled"`)
	}
	c.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *challenger) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Flush flushes a streamed response.
func (c *challenger) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// principalKey holds the principal in TokenInfo.Extra.
const principalKey = "capsuled.principal"

// verify authenticates a bearer credential with the same service as the
// REST operations.
func (s *Server) verify(ctx context.Context, credential string, _ *http.Request) (*sdkauth.TokenInfo, error) {
	p, err := s.auth.Authenticate(ctx, credential)
	if err != nil {
		if domain.KindOf(err) == domain.KindUnauthenticated {
			return nil, fmt.Errorf("%w: %s", sdkauth.ErrInvalidToken, clientMessage(err))
		}
		s.log.ErrorContext(ctx, "mcp: authenticating a credential failed", "err", err)
		return nil, errors.New("internal error while checking the credential")
	}
	scopes := make([]string, len(p.Scopes))
	for i, sc := range p.Scopes {
		scopes[i] = string(sc)
	}
	user := p.KeyID
	if p.TokenID != "" {
		user += "/" + p.TokenID
	}
	return &sdkauth.TokenInfo{Scopes: scopes, UserID: user, Extra: map[string]any{principalKey: p}}, nil
}

func principalOf(ti *sdkauth.TokenInfo) *domain.Principal {
	if ti == nil {
		return nil
	}
	p, _ := ti.Extra[principalKey].(*domain.Principal)
	return p
}

// RunStdio serves MCP over t (a stdio transport) until the client
// disconnects or ctx ends, acting for p in every call. readOnly leaves out
// the tools that write.
func (s *Server) RunStdio(ctx context.Context, t mcp.Transport, p *domain.Principal, readOnly bool) error {
	set := s.toolsFor(p)
	if set == 0 {
		return errors.New("mcp: no tools to serve: the principal has neither the capsules:read nor the memory scope, or the services are off")
	}
	return s.build(set, p, readOnly).Run(ctx, t)
}

// LocalPrincipal is the principal of a stdio server over a local data
// directory: whoever can read the directory may use every capsule and
// namespace in it.
func LocalPrincipal() *domain.Principal {
	return &domain.Principal{KeyName: "local", Scopes: []domain.Scope{domain.ScopeCapsulesRead, domain.ScopeMemory}}
}

// writeError writes the project's JSON error body (openapi.yaml's
// ErrorResponse; status and type as in api's error table) for the refusals
// this package makes itself. A missing or bad credential is answered by the
// SDK's auth.RequireBearerToken: 401 with WWW-Authenticate, as MCP clients
// expect.
func writeError(w http.ResponseWriter, status int, typ, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": code,
	}})
}

package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"capsuled/gen"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// Config holds the HTTP layer's settings.
type Config struct {
	// MaxBodyBytes limits JSON request bodies (413 beyond). Default 4 MiB.
	MaxBodyBytes int64
	// MaxUploadBytes limits file uploads (413 beyond). Default 64 MiB.
	MaxUploadBytes int64
	// UploadDir is where uploads stream to before ingestion takes them.
	UploadDir string
	// CapsuleHostSuffix enables host-based capsule addresses
	// (<capsule>.<suffix>); empty turns them off.
	CapsuleHostSuffix string
	// Version is reported by the health probes.
	Version string
	// MaxMessageTokens bounds the tokens of one chat message (svc-1 and the
	// memory operation), MaxRequestTokens those of all the messages of one
	// request (both operations), MaxMemoryRequestTokens those of the turns
	// of one memory request that the namespace does not hold yet (413
	// beyond). Defaults DefaultMaxMessageTokens, DefaultMaxRequestTokens
	// and DefaultMaxMemoryRequestTokens.
	MaxMessageTokens       int
	MaxRequestTokens       int
	MaxMemoryRequestTokens int
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 64 << 20
	}
	if c.MaxMessageTokens <= 0 {
		c.MaxMessageTokens = DefaultMaxMessageTokens
	}
	if c.MaxRequestTokens <= 0 {
		c.MaxRequestTokens = DefaultMaxRequestTokens
	}
	if c.MaxMemoryRequestTokens <= 0 {
		c.MaxMemoryRequestTokens = DefaultMaxMemoryRequestTokens
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// Auth is what the HTTP layer needs from the key and token service.
type Auth interface {
	Authenticate(ctx context.Context, credential string) (*domain.Principal, error)
	// The key operations act on behalf of a principal, which reaches only
	// keys within its own access (see package auth).
	CreateKeyAs(ctx context.Context, by *domain.Principal, in auth.NewKey) (domain.Key, string, error)
	ListKeysAs(ctx context.Context, by *domain.Principal) ([]domain.Key, error)
	GetKeyAs(ctx context.Context, by *domain.Principal, id string) (domain.Key, error)
	RevokeKeyAs(ctx context.Context, by *domain.Principal, id string) (domain.Key, error)
	MintToken(ctx context.Context, p *domain.Principal, namespaces []string, ttl time.Duration) (string, domain.AccessToken, error)
}

// RateLimiter admits requests per key and charges the tokens they used.
type RateLimiter interface {
	Allow(key string) (ok bool, retryAfter time.Duration)
	Charge(key string, tokens int)
}

// Check is one readiness check.
type Check func(ctx context.Context) error

// Model is one entry of GET /v1/models.
type Model struct {
	ID          string
	OwnedBy     string
	Created     time.Time
	Description string // optional
}

// Deps are the services behind the HTTP layer. Nil services answer 501.
type Deps struct {
	Auth   Auth
	Checks map[string]Check
	// Models are the model ids this server serves (svc-1 first).
	Models []Model
	// Limiter enforces per-key rate limits (nil: none).
	Limiter RateLimiter
	// Capsules, Chat and Memory are the services of the three operations.
	Capsules Capsules
	Chat     Chat
	Memory   Memory
	// Ingest counts ingestion outcomes for /metrics (nil: not exported).
	Ingest IngestCounter
}

// IngestCounter reports this process's ingestion outcomes (capsule.Service).
type IngestCounter interface {
	IngestCounts() domain.IngestCounts
}

// Server implements the generated strict server interface.
type Server struct {
	cfg               Config
	log               *slog.Logger
	spec              *Spec
	validationOptions *openapi3filter.Options
	metrics           *metrics
	auth              Auth
	checks            map[string]Check
	models            []Model
	limiter           RateLimiter
	capsules          Capsules
	chat              Chat
	memory            Memory
}

var _ gen.StrictServerInterface = (*Server)(nil)

// NewServer returns a Server over deps.
func NewServer(cfg Config, spec *Spec, deps Deps, log *slog.Logger) (*Server, error) {
	if deps.Auth == nil {
		return nil, errors.New("api: an Auth service is required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Server{
		cfg:               cfg.WithDefaults(),
		log:               log,
		spec:              spec,
		validationOptions: newValidationOptions(),
		metrics:           newMetrics(deps.Ingest),
		auth:              deps.Auth,
		checks:            deps.Checks,
		models:            deps.Models,
		limiter:           deps.Limiter,
		capsules:          deps.Capsules,
		chat:              deps.Chat,
		memory:            deps.Memory,
	}, nil
}

// Handler returns the server's http.Handler: the generated routes behind the
// observe and gate layers.
func (s *Server) Handler() http.Handler {
	strict := gen.NewStrictHandlerWithOptions(s, nil, gen.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, r, s.log, &domain.Error{Kind: domain.KindInvalid, Code: "invalid_request", Message: firstLine(err)})
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, r, s.log, err)
		},
	})
	mux := http.NewServeMux()
	routes := gen.HandlerWithOptions(decodedOnce{ServerInterface: strict, s: s}, gen.StdHTTPServerOptions{
		BaseRouter: mux,
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, r, s.log, &domain.Error{Kind: domain.KindInvalid, Code: "invalid_request", Message: firstLine(err)})
		},
	})
	return s.observe(s.gate(routes))
}

// chargeTokens debits the tokens a request used from its key's rate limit
// (its tokens-per-minute bucket; a key in debt gets 429 until the refill
// pays it back). Every model completion that the HTTP layer runs is charged
// here, streamed or not: chat, ask's turns and memory chat.
func (s *Server) chargeTokens(ctx context.Context, tokens int) {
	if p := principal(ctx); p != nil && s.limiter != nil {
		s.limiter.Charge(p.KeyID, tokens)
	}
}

// complete runs one svc-1 turn and charges its prompt and completion tokens.
func (s *Server) complete(ctx context.Context, req *domain.ChatRequest) (*domain.Completion, error) {
	c, err := s.chat.Complete(ctx, req)
	if c != nil {
		s.chargeTokens(ctx, c.Usage.Total())
	}
	return c, err
}

// chargedChat is the chat service seen through Server.complete (ask's loop
// runs its turns through it, so each turn is charged).
type chargedChat struct{ s *Server }

func (c chargedChat) Complete(ctx context.Context, req *domain.ChatRequest) (*domain.Completion, error) {
	return c.s.complete(ctx, req)
}

// notImplemented is the answer of an operation whose service is not configured.
func notImplemented(what string) error {
	return &domain.Error{Kind: domain.KindNotImplemented, Code: "not_implemented", Message: what + " is not available on this server"}
}

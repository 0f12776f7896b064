package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// Prefix is the path under which the dashboard is served.
const Prefix = "/dashboard"

// Config holds the dashboard's settings.
type Config struct {
	// SessionTTL is how long a sign-in lasts. Default 12h.
	SessionTTL time.Duration
	// PublicURL is the address browsers use to reach the server (scheme and
	// host, such as https://capsuled.example.com), when it is not the one the
	// server listens on, as behind a TLS-terminating proxy. Its origin is
	// trusted for form posts, it is the address in the playground's curl
	// command, and when it is https the cookies are Secure. Empty: the
	// request's own.
	PublicURL string
	// MaxUploadBytes limits one upload form. Default 64 MiB.
	MaxUploadBytes int64
	// SessionKeys sign sessions (the first) and verify them (any), instead
	// of a key generated and kept in the store; to rotate, put a new key
	// first and keep the old ones for SessionTTL.
	SessionKeys [][]byte
	// Version is shown in the footer and on the status page.
	Version string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.SessionTTL <= 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 64 << 20
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Auth is what the dashboard needs from the key and token service.
type Auth interface {
	Authenticate(ctx context.Context, credential string) (*domain.Principal, error)
	// GetKey looks up the session's own key.
	GetKey(ctx context.Context, id string) (domain.Key, error)
	// The key operations act on behalf of the signed-in key, which reaches
	// only keys within its own access (see package auth).
	CreateKeyAs(ctx context.Context, by *domain.Principal, in auth.NewKey) (domain.Key, string, error)
	ListKeysAs(ctx context.Context, by *domain.Principal) ([]domain.Key, error)
	GetKeyAs(ctx context.Context, by *domain.Principal, id string) (domain.Key, error)
	RevokeKeyAs(ctx context.Context, by *domain.Principal, id string) (domain.Key, error)
	MintToken(ctx context.Context, p *domain.Principal, namespaces []string, ttl time.Duration) (string, domain.AccessToken, error)
}

// Secrets keeps named server secrets (auth.Store.Secret): the value stored
// under name, or generate's, stored on first use.
type Secrets interface {
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Capsules is what the dashboard needs from the capsule service. The listed
// capsules carry their item and chunk counts.
type Capsules interface {
	ListCapsules(ctx context.Context) ([]domain.Capsule, error)
	CreateCapsule(ctx context.Context, name, description string) (domain.Capsule, error)
	DeleteCapsule(ctx context.Context, name string) error
	ListItems(ctx context.Context, capsule string) ([]domain.Item, error)
	AddFile(ctx context.Context, capsule string, f Upload) (domain.Item, error)
	DeleteItem(ctx context.Context, capsule, id string) error
	Query(ctx context.Context, capsule string, q domain.Query) ([]domain.Hit, error)
}

// Upload is one uploaded file.
type Upload struct {
	FileName string
	FileType string // as the browser sent it; may be empty
	Size     int64
	Body     io.Reader
}

// Memory is what the dashboard needs from the memory service.
type Memory interface {
	ListNamespaces(ctx context.Context) ([]domain.Namespace, error)
	// ListMemories lists a namespace's memories, newest first, matching
	// search when it is not empty, at most limit.
	ListMemories(ctx context.Context, namespace, search string, limit int) ([]domain.Memory, error)
	DeleteMemory(ctx context.Context, namespace, id string) error
	DeleteNamespace(ctx context.Context, namespace string) error
	// ExportNamespace writes the namespace as JSON Lines.
	ExportNamespace(ctx context.Context, namespace string, w io.Writer) error
}

// StatusFunc reports the server's status for the status page.
type StatusFunc func(ctx context.Context) Status

// Status is what the status page shows.
type Status struct {
	Version  string
	Store    string
	Embedder string
	// Semantic reports whether dense (semantic) search is on.
	Semantic bool
	Engines  []Engine
	Checks   []Check
	Figures  []Figure
}

// Engine is one upstream engine and its health.
type Engine struct {
	Name, Kind, URL string
	OK              bool
	Detail          string
}

// Check is one readiness check.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Figure is one key number, already formatted.
type Figure struct {
	Label, Value string
}

// Deps are the services behind the dashboard. Auth and Secrets are required;
// nil Capsules, Memory or Status turn their pages into notices.
type Deps struct {
	Auth     Auth
	Secrets  Secrets
	Capsules Capsules
	Memory   Memory
	Status   StatusFunc
}

// Handler serves the dashboard.
type Handler struct {
	cfg      Config
	log      *slog.Logger
	auth     Auth
	secrets  Secrets
	capsules Capsules
	memory   Memory
	status   StatusFunc
	pages    *pages
	mux      *http.ServeMux
	// public is PublicURL parsed (nil when unset); cop refuses cross-origin
	// form posts.
	public *url.URL
	cop    *http.CrossOriginProtection

	mu        sync.Mutex
	keys      [][]byte             // the session keys (the first signs), loaded on first use
	signedOut map[string]time.Time // session id → expiry, for sessions signed out here
}

// New returns the dashboard's handler.
func New(cfg Config, deps Deps, log *slog.Logger) (*Handler, error) {
	if deps.Auth == nil || deps.Secrets == nil {
		return nil, errors.New("dashboard: Auth and Secrets are required")
	}
	if log == nil {
		log = slog.Default()
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	cop := http.NewCrossOriginProtection()
	var public *url.URL
	if cfg.PublicURL != "" {
		if public, err = ParsePublicURL(cfg.PublicURL); err != nil {
			return nil, err
		}
		if err := cop.AddTrustedOrigin(public.Scheme + "://" + public.Host); err != nil {
			return nil, fmt.Errorf("dashboard: public URL: %w", err)
		}
	}
	h := &Handler{
		cfg:       cfg.WithDefaults(),
		log:       log,
		auth:      deps.Auth,
		secrets:   deps.Secrets,
		capsules:  deps.Capsules,
		memory:    deps.Memory,
		status:    deps.Status,
		pages:     p,
		public:    public,
		keys:      slices.Clone(cfg.SessionKeys),
		cop:       cop,
		signedOut: map[string]time.Time{},
	}
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	m.HandleFunc("GET "+Prefix+"/assets/{file}", h.asset)
	m.HandleFunc("GET "+Prefix+"/signin", h.signInPage)
	m.HandleFunc("POST "+Prefix+"/signin", h.signIn)
	m.HandleFunc("POST "+Prefix+"/signout", h.authed(h.signOut))

	m.HandleFunc("GET "+Prefix+"/{$}", h.authed(h.statusPage))
	m.HandleFunc("GET "+Prefix+"/status", h.authed(h.statusPage))

	m.HandleFunc("GET "+Prefix+"/keys", h.authed(h.keysPage))
	m.HandleFunc("POST "+Prefix+"/keys", h.authed(h.createKey))
	m.HandleFunc("GET "+Prefix+"/keys/{key}/revoke", h.authed(h.revokeKeyPage))
	m.HandleFunc("POST "+Prefix+"/keys/{key}/revoke", h.authed(h.revokeKey))
	m.HandleFunc("POST "+Prefix+"/tokens", h.authed(h.mintToken))

	m.HandleFunc("GET "+Prefix+"/capsules", h.authed(h.capsulesPage))
	m.HandleFunc("POST "+Prefix+"/capsules", h.authed(h.createCapsule))
	m.HandleFunc("GET "+Prefix+"/capsules/{capsule}", h.authed(h.capsulePage))
	m.HandleFunc("GET "+Prefix+"/capsules/{capsule}/delete", h.authed(h.deleteCapsulePage))
	m.HandleFunc("POST "+Prefix+"/capsules/{capsule}/delete", h.authed(h.deleteCapsule))
	m.HandleFunc("POST "+Prefix+"/capsules/{capsule}/items", h.authed(h.uploadItems))
	m.HandleFunc("GET "+Prefix+"/capsules/{capsule}/items/{item}/delete", h.authed(h.deleteItemPage))
	m.HandleFunc("POST "+Prefix+"/capsules/{capsule}/items/{item}/delete", h.authed(h.deleteItem))
	m.HandleFunc("GET "+Prefix+"/playground", h.authed(h.playgroundPage))

	m.HandleFunc("GET "+Prefix+"/namespaces", h.authed(h.namespacesPage))
	m.HandleFunc("GET "+Prefix+"/namespaces/{ns}", h.authed(h.namespacePage))
	m.HandleFunc("GET "+Prefix+"/namespaces/{ns}/export", h.authed(h.exportNamespace))
	m.HandleFunc("GET "+Prefix+"/namespaces/{ns}/delete", h.authed(h.deleteNamespacePage))
	m.HandleFunc("POST "+Prefix+"/namespaces/{ns}/delete", h.authed(h.deleteNamespace))
	m.HandleFunc("GET "+Prefix+"/namespaces/{ns}/memories/{id}/delete", h.authed(h.deleteMemoryPage))
	m.HandleFunc("POST "+Prefix+"/namespaces/{ns}/memories/{id}/delete", h.authed(h.deleteMemory))

	m.HandleFunc(Prefix+"/", h.authed(func(w http.ResponseWriter, r *http.Request, s *session) {
		h.fail(w, r, s, http.StatusNotFound, "There is no such page.")
	}))
	h.mux = m
}

// ServeHTTP serves one dashboard request with the security headers set.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	setSecurityHeaders(sw.Header())
	defer func() {
		// The path and method only: never a form body, a query or a cookie.
		h.log.LogAttrs(r.Context(), slog.LevelDebug, "dashboard request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Duration("duration", time.Since(start)))
	}()
	h.mux.ServeHTTP(sw, r)
}

// setSecurityHeaders sets the headers every dashboard response carries.
func setSecurityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ParsePublicURL checks a public URL: http or https, a host, no path, query
// or fragment.
func ParsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("public URL %q: want http(s)://host[:port], without a path", raw)
	}
	u.Path = ""
	return u, nil
}

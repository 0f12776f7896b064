package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"capsuled/api"
	"capsuled/internal/auth"
	"capsuled/internal/chat"
	"capsuled/internal/mcpserver"
	"capsuled/internal/ratelimit"
)

// App is a running capsuled: its store, services and HTTP handler.
type App struct {
	cfg     Config
	log     *slog.Logger
	db      *backend
	auth    *auth.Service
	secrets Secrets // the operator's signing keys (none: generated, in the store)
	mcp     *mcpserver.Server
	handler http.Handler
	// memoryDefault is the memory model svc-1 selects on the memory
	// operation (set by newMemory).
	memoryDefault string
	// embedderInfo names the embedding model for the status page (set by
	// newCapsules when semantic search is on).
	embedderInfo string
	closers      []io.Closer
	// embeds is the one embedder (and tokenizer) the services share.
	embeds sharedEmbedder
}

// New opens the store, builds the services and the HTTP handler.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	a := &App{cfg: cfg, log: log}
	dbPath := cfg.DatabasePath()
	if isPostgresURL(cfg.Store) {
		dbPath = ""
	}
	if err := securePaths(cfg.DataDir, dbPath, log); err != nil {
		return nil, err
	}
	db, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.db = db
	a.closers = append(a.closers, db)
	a.auth = auth.New(db.Keys(), cfg.Now, log)
	if a.secrets, err = loadSecrets(cfg.SecretsFile, cfg.Secrets, log); err != nil {
		a.Close()
		return nil, err
	}
	if len(a.secrets.TokenSigning) > 0 {
		a.auth.UseSigningKeys(a.secrets.TokenSigning)
	}

	spec, err := api.LoadSpec(ctx)
	if err != nil {
		a.Close()
		return nil, err
	}
	capsules, err := a.newCapsules(ctx)
	if err != nil {
		a.Close()
		return nil, err
	}
	chat, err := a.newChat(ctx)
	if err != nil {
		a.Close()
		return nil, err
	}
	mem, memModels, err := a.newMemory(ctx)
	if err != nil {
		a.Close()
		return nil, err
	}
	ingest, _ := capsules.(api.IngestCounter)
	limiter := ratelimit.New(ratelimit.Limits{RequestsPerMinute: cfg.RateLimitRPM, TokensPerMinute: cfg.RateLimitTPM}, cfg.Now)
	srv, err := api.NewServer(api.Config{
		MaxBodyBytes:           cfg.MaxBodyBytes,
		MaxUploadBytes:         cfg.MaxUploadBytes,
		MaxMessageTokens:       cfg.MaxMessageTokens,
		MaxRequestTokens:       cfg.MaxRequestTokens,
		MaxMemoryRequestTokens: cfg.MaxMemoryRequestTokens,
		CapsuleHostSuffix:      cfg.CapsuleHostSuffix,
		Version:                cfg.Version,
	}, spec, api.Deps{
		Auth:     a.auth,
		Checks:   map[string]api.Check{"store": db.Ping},
		Limiter:  limiter,
		Models:   append([]api.Model{a.svc1Model()}, memModels...),
		Capsules: capsules,
		Chat:     chat,
		Memory:   mem,
		Ingest:   ingest,
	}, log)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.handler, err = a.mountDashboard(srv.Handler(), srv.Observe, capsules, mem)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.mcp = a.newMCP(capsules, mem, limiter)
	a.handler = mountMCP(srv.Observe("mcp", a.mcp.Handler()), a.handler)
	return a, nil
}

// Auth is the key and token service (for the CLI's key commands and the
// first-start admin key).
func (a *App) Auth() *auth.Service { return a.auth }

// Handler is the HTTP handler of the whole server.
func (a *App) Handler() http.Handler { return a.handler }

// Close releases the store and every other resource, in reverse order.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i].Close())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// Serve serves HTTP on l until ctx ends, then shuts down gracefully.
func (a *App) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: a.cfg.ReadHeaderTimeout,
		ReadTimeout:       a.cfg.ReadTimeout,
		WriteTimeout:      a.cfg.WriteTimeout,
		IdleTimeout:       a.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down", "timeout", a.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Run listens on the configured address and serves until ctx ends.
func (a *App) Run(ctx context.Context) error {
	l, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Addr, err)
	}
	a.log.Info("capsuled listening", "addr", "http://"+l.Addr().String(), "data", a.cfg.DataDir, "store", a.db.name)
	return a.Serve(ctx, l)
}

// svc1Model is svc-1's entry of GET /v1/models.
func (a *App) svc1Model() api.Model {
	m := api.Model{ID: chat.Model, OwnedBy: "capsuled", Created: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Description: "agentic retrieval model (POST /v1/chat/completions)"}
	if a.memoryDefault != "" {
		m.Description += "; on POST /v1/memory/chat/completions it selects the memory model " + a.memoryDefault
	}
	return m
}

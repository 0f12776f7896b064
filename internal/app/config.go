package app

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"capsuled/internal/dashboard"
)

// Config is the server's configuration. Every field has a command-line flag
// and a CAPSULED_* environment variable (see cmd/capsuled); zero values mean
// the documented default, applied by WithDefaults.
type Config struct {
	// Addr is the listen address. Default 127.0.0.1:8080.
	Addr string
	// DataDir holds the SQLite database, uploads and models. Default ./data.
	DataDir string
	// Store selects the storage backend: "" or "sqlite" for the embedded
	// database in DataDir, or a postgres:// URL for PostgreSQL (the URL's
	// pool_max_conns sets the pool size).
	Store string
	// CapsuleHostSuffix turns on host-based capsule addresses
	// (<capsule>.<suffix>); empty turns them off.
	CapsuleHostSuffix string
	// PublicURL is the address browsers use (http(s)://host[:port]) when it
	// is not the listen address, as behind a TLS-terminating proxy: the
	// dashboard trusts its origin for form posts and marks cookies Secure
	// when it is https. Empty: the request's own.
	PublicURL string
	// SecretsFile and Secrets (the text of one, from CAPSULED_SECRETS) give
	// the token and session signing keys (see ParseSecrets) instead of the
	// ones generated and kept in the database.
	SecretsFile, Secrets string
	// MaxBodyBytes limits JSON request bodies. Default 4 MiB.
	MaxBodyBytes int64
	// MaxUploadBytes limits file uploads. Default 64 MiB.
	MaxUploadBytes int64
	// MaxMessageTokens, MaxRequestTokens and MaxMemoryRequestTokens bound
	// the tokens of one chat message, of one svc-1 request and of one
	// memory chat request (api.Config; 0: its defaults).
	MaxMessageTokens       int
	MaxRequestTokens       int
	MaxMemoryRequestTokens int
	// ShutdownTimeout bounds the graceful shutdown. Default 15s.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout protect
	// against slow and half-open clients. Defaults 10s, 5m, 10m, 2m.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// RateLimitRPM and RateLimitTPM are per-key limits of requests and of
	// model tokens per minute (0: off; capsuled serve defaults to 6000 and 0).
	RateLimitRPM, RateLimitTPM int
	// Version is reported by the health probes and the dashboard.
	Version string
	// Capsules configures ingestion, the embedder and retrieval (capsules.go).
	Capsules CapsulesConfig
	// Chat configures the svc-1 engine (chat.go).
	Chat ChatConfig
	// Memory configures the memory operation (memory.go).
	Memory MemoryConfig
	// Now is the clock (default time.Now); tests pass their own.
	Now func() time.Time
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Addr, "127.0.0.1:8080")
	def(&c.DataDir, "data")
	def(&c.Version, "dev")
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 64 << 20
	}
	defDur(&c.ShutdownTimeout, 15*time.Second)
	defDur(&c.ReadHeaderTimeout, 10*time.Second)
	defDur(&c.ReadTimeout, 5*time.Minute)
	defDur(&c.WriteTimeout, 10*time.Minute)
	defDur(&c.IdleTimeout, 2*time.Minute)
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("addr %q: %w", c.Addr, err)
	}
	switch {
	case c.Store == "" || c.Store == "sqlite":
	case isPostgresURL(c.Store):
	default:
		return fmt.Errorf("store %q: want sqlite or a postgres:// URL", c.Store)
	}
	if c.DataDir == "" {
		return errors.New("data: a data directory is required")
	}
	if c.PublicURL != "" {
		if _, err := dashboard.ParsePublicURL(c.PublicURL); err != nil {
			return fmt.Errorf("public-url: %w", err)
		}
	}
	return nil
}

// DatabasePath is the SQLite database file in the data directory.
func (c Config) DatabasePath() string { return filepath.Join(c.DataDir, "capsuled.db") }

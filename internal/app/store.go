package app

import (
	"context"
	"strings"

	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/memory"
	"capsuled/internal/store/postgres"
	"capsuled/internal/store/sqlite"
)

// backend is the storage backend the services run on, whichever one the
// configuration picked.
type backend struct {
	name     string // "sqlite" or "postgres", for the logs
	keys     auth.Store
	capsules capsule.Store
	memory   memory.Store
	ping     func(context.Context) error
	close    func() error
}

// Keys, Capsules, Memory, Ping and Close give the backend's stores and
// lifecycle to the wiring.
func (b *backend) Keys() auth.Store               { return b.keys }
func (b *backend) Capsules() capsule.Store        { return b.capsules }
func (b *backend) Memory() memory.Store           { return b.memory }
func (b *backend) Ping(ctx context.Context) error { return b.ping(ctx) }
func (b *backend) Close() error                   { return b.close() }

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openStore opens the configured backend: PostgreSQL for a postgres:// URL
// (pool size: the URL's pool_max_conns), else the SQLite database in the
// data directory.
func openStore(ctx context.Context, cfg Config) (*backend, error) {
	switch {
	case isPostgresURL(cfg.Store):
		db, err := postgres.Open(ctx, cfg.Store, postgres.Options{ClaimLease: cfg.Capsules.IngestLease})
		if err != nil {
			return nil, err
		}
		return &backend{name: "postgres", keys: db.Keys(), capsules: db.Capsules(), memory: db.Memory(), ping: db.Ping, close: db.Close}, nil
	default:
		db, err := sqlite.Open(ctx, cfg.DatabasePath())
		if err != nil {
			return nil, err
		}
		return &backend{name: "sqlite", keys: db.Keys(), capsules: db.Capsules(), memory: db.Memory(), ping: db.Ping, close: db.Close}, nil
	}
}

package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"capsuled/internal/auth"
	"capsuled/internal/capsule"
	"capsuled/internal/store/postgres"
	"capsuled/internal/store/sqlite"
)

// benchStore is the store and data folder a bench builds its capsule in.
type benchStore struct {
	dir  string // data folder: blobs, and the SQLite database
	caps capsule.Store
	keys auth.Store
	pg   *postgres.DB // the PostgreSQL store, or nil
	lite *sqlite.DB   // the SQLite store, or nil
	tmp  bool         // dir is removed by close
}

// openBenchStore makes the data folder dataDir, or a temporary folder
// (named with prefix) when it is "", and opens the store: PostgreSQL at
// pgURL with pgOpts when pgURL is not "", else SQLite in the folder.
func openBenchStore(ctx context.Context, dataDir, prefix, pgURL string, pgOpts postgres.Options) (*benchStore, error) {
	b := &benchStore{dir: dataDir}
	if b.dir == "" {
		tmp, err := os.MkdirTemp("", prefix)
		if err != nil {
			return nil, err
		}
		b.dir, b.tmp = tmp, true
	} else if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if pgURL != "" {
		if b.pg, err = postgres.Open(ctx, pgURL, pgOpts); err == nil {
			b.caps, b.keys = b.pg.Capsules(), b.pg.Keys()
		}
	} else if b.lite, err = sqlite.Open(ctx, filepath.Join(b.dir, "capsuled.db")); err == nil {
		b.caps, b.keys = b.lite.Capsules(), b.lite.Keys()
	}
	if err != nil {
		b.removeTmp()
		return nil, err
	}
	return b, nil
}

// close closes the store and removes a temporary data folder.
func (b *benchStore) close() error {
	var err error
	if b.pg != nil {
		err = b.pg.Close()
	}
	if b.lite != nil {
		err = b.lite.Close()
	}
	return errors.Join(err, b.removeTmp())
}

func (b *benchStore) removeTmp() error {
	if !b.tmp {
		return nil
	}
	return os.RemoveAll(b.dir)
}

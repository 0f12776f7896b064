package app

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// securePaths makes the data directory 0700 and the SQLite database (and
// its -wal and -shm files) 0600, creating them so when they do not exist and
// tightening, with a warning, those that are open to the group or others:
// the database holds key hashes, the server's secrets (unless they come from
// --secrets-file) and every tenant's data.
func securePaths(dataDir, dbPath string, log *slog.Logger) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := tighten(dataDir, 0o700, log); err != nil {
		return err
	}
	if dbPath == "" {
		return nil
	}
	// SQLite creates the database 0644 and its -wal and -shm files with the
	// database's mode: create the database first, 0600.
	f, err := os.OpenFile(dbPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	f.Close()
	for _, p := range []string{dbPath, dbPath + "-wal", dbPath + "-shm"} {
		if err := tighten(p, 0o600, log); err != nil {
			return err
		}
	}
	return nil
}

// tighten removes from path's mode every permission beyond want (a missing
// path is fine), and warns when there were any.
func tighten(path string, want fs.FileMode, log *slog.Logger) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check permissions: %w", err)
	}
	mode := st.Mode().Perm()
	if mode&^want == 0 {
		return nil
	}
	if err := os.Chmod(path, mode&want); err != nil {
		return fmt.Errorf("restrict %s to %o: %w", path, want, err)
	}
	log.Warn("tightened permissions: the data directory holds secrets and every tenant's data", "path", path, "was", fmt.Sprintf("%04o", mode), "now", fmt.Sprintf("%04o", mode&want))
	return nil
}

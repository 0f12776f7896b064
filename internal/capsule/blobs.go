package capsule

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// blobs keeps original item bytes under their SHA-256 in a directory.
type blobs struct{ dir string }

func (b blobs) path(hash string) string {
	if len(hash) < 2 {
		return filepath.Join(b.dir, "_", hash)
	}
	return filepath.Join(b.dir, hash[:2], hash)
}

// put streams r to a temporary file, hashing it, and moves it to its place.
// It returns the hex hash and the size. Errors of r (such as a size limit)
// are returned as they are.
func (b blobs) put(r io.Reader) (string, int64, error) {
	tmpDir := filepath.Join(b.dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return "", 0, fmt.Errorf("blob dir: %w", err)
	}
	f, err := os.CreateTemp(tmpDir, "upload-*")
	if err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		f.Close()
		return "", 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	hash := hex.EncodeToString(h.Sum(nil))
	dst := b.path(hash)
	if _, err := os.Stat(dst); err == nil {
		return hash, n, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", 0, fmt.Errorf("blob dir: %w", err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	return hash, n, nil
}

func (b blobs) open(hash string) (*os.File, error) { return os.Open(b.path(hash)) }

func (b blobs) remove(hash string) error {
	err := os.Remove(b.path(hash))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// each calls fn with the hash of every stored blob.
func (b blobs) each(fn func(hash string)) error {
	err := filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if d.Name() == "tmp" {
				return filepath.SkipDir
			}
			return nil
		}
		if len(d.Name()) == 64 {
			fn(d.Name())
		}
		return nil
	})
	return err
}

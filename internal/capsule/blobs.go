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

// An Upload is a file streamed to the data directory and hashed, waiting to
// become an item's content (AddItem) or to be discarded.
type Upload struct {
	path string
	hash string
	size int64
}

// Size is the upload's length in bytes.
func (u *Upload) Size() int64 { return u.size }

// Discard removes the upload if no item took it; safe to call twice.
func (u *Upload) Discard() {
	if u != nil && u.path != "" {
		os.Remove(u.path)
		u.path = ""
	}
}

// stage streams r to a temporary file, hashing it. Errors of r (such as a
// size limit) are returned as they are.
func (b blobs) stage(r io.Reader) (*Upload, error) {
	tmpDir := filepath.Join(b.dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return nil, fmt.Errorf("blob dir: %w", err)
	}
	f, err := os.CreateTemp(tmpDir, "upload-*")
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	u := &Upload{path: f.Name()}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("blob: %w", cerr)
	}
	if err != nil {
		u.Discard()
		return nil, err
	}
	u.hash, u.size = hex.EncodeToString(h.Sum(nil)), n
	return u, nil
}

// place moves an upload to its content-addressed place (keeping the copy
// already there, if any).
func (b blobs) place(u *Upload) error {
	if u.path == "" {
		return errors.New("blob: upload already used or discarded")
	}
	dst := b.path(u.hash)
	if _, err := os.Stat(dst); err == nil {
		u.Discard()
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("blob dir: %w", err)
	}
	if err := os.Rename(u.path, dst); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	u.path = ""
	return nil
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

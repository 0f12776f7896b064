// Package atomicfile writes a file whole or not at all: the content goes to
// a temporary file in the same folder, which is then renamed over the
// target, so a reader sees the old file or the complete new one.
//
// The files written this way (dense graphs, vectors files, keyword index
// files) are caches that the store can rebuild, so the write is not synced
// to disk: github.com/google/renameio would sync each one, a cost at every
// shutdown (a vectors file of a million chunks is 1.7 GB) that buys nothing
// a rebuild does not give.
package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Write creates path's folder if needed and writes path with write, through
// a temporary file named by pattern (os.CreateTemp's) in the same folder,
// buffered. When write or any step fails, path is left as it was and the
// temporary file is removed.
func Write(path, pattern string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename: no such file
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

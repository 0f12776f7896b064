//go:build unix

package retrieval

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the file at path read-only into memory (nil for an empty
// file). The mapping is never unmapped: entries and graph nodes may point
// into it for the rest of the process.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, nil
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("map %s: too large", path)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return b, nil
}

// releasePages tells the kernel this process will not need b's pages soon:
// they leave its resident set (a file's stay in the page cache), and are
// read again on the next touch.
func releasePages(b []byte) {
	if len(b) > 0 {
		syscall.Madvise(b, syscall.MADV_DONTNEED) //nolint:errcheck // advice only
	}
}

//go:build !unix

package retrieval

import "os"

// mapFile reads the file at path into memory, where it cannot be mapped.
func mapFile(path string) ([]byte, error) { return os.ReadFile(path) }

// releasePages does nothing where files are read, not mapped.
func releasePages([]byte) {}

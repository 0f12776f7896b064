package main

import (
	"context"
	"errors"
	"io"
)

// runBenchRetrieval is `capsuled bench retrieval`.
func runBenchRetrieval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not available in this build yet")
}

package main

import (
	"context"
	"errors"
	"io"
)

// runBenchAgent is `capsuled bench agent`.
func runBenchAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not available in this build yet")
}

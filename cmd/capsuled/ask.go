package main

import (
	"context"
	"errors"
	"io"
)

// runAsk runs the svc-1 retrieval loop over a capsule.
func runAsk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not available in this build yet")
}

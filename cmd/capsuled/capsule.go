package main

import (
	"context"
	"errors"
	"io"
)

// runCapsule manages capsules: capsule create|list|delete NAME.
func runCapsule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not available in this build yet")
}

// runAdd adds files, folders or text to a capsule.
func runAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not available in this build yet")
}

// runQuery queries a capsule.
func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not available in this build yet")
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"capsuled/conformance"
)

// runConformance validates a file of captured traffic against openapi.yaml:
//
//	capsuled conformance validate FILE
//
// The file format is documented in package conformance (one JSON exchange
// per line). It exits non-zero at the first invalid exchange.
func runConformance(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 2 || args[0] != "validate" {
		fmt.Fprintln(stderr, "usage: capsuled conformance validate FILE   (FILE '-' reads standard input)")
		return errUsage
	}
	in := io.Reader(os.Stdin)
	if args[1] != "-" {
		f, err := os.Open(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	v, err := conformance.NewValidator(ctx)
	if err != nil {
		return err
	}
	n, err := v.ValidateCapture(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d exchanges valid against openapi.yaml\n", n)
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
)

// runBench dispatches the benchmarks: bench retrieval|agent|memory [flags].
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	benches := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"retrieval": runBenchRetrieval,
		"agent":     runBenchAgent,
		"load":      runBenchLoad,
		"memory":    runBenchMemory,
	}
	if len(args) == 0 || benches[args[0]] == nil {
		fmt.Fprintln(stderr, "usage: capsuled bench retrieval|agent|memory|load [flags]   (-h after the name for its flags)")
		return errUsage
	}
	return benches[args[0]](ctx, args[1:], stdout, stderr)
}

// Package bench holds the benchmark harnesses behind `capsuled bench`:
//
//	retrieval  a BEIR data set (SciFact, HotpotQA) ingested into a fresh
//	           capsule: nDCG@10 and Recall@100 of hybrid, BM25 and dense
//	           search, ingestion speed, query latency, resident memory
//	memory     LoCoMo conversations written to memory namespaces: evidence
//	           recall of the memory selection against baselines
//	agent      a multi-hop set (HotpotQA or LoCoMo) answered by one-shot
//	           search and by svc-1's loop over the real HTTP API
//	load       an open-loop load generator against a running server
//	scale      a capsule of N chunks (real text, model or synthetic vectors):
//	           ingest rate, index load, query latency, dense recall against
//	           exact search, server cold start and memory, on SQLite or
//	           PostgreSQL
//
// Each harness parses its own flags (internal/cli conventions) and prints a
// table, or one JSON object as its last line with --json. Run dispatches on
// the harness's name.
package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"capsuled/internal/cli"
)

// A harness runs one benchmark with its command-line arguments.
type harness func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// harnesses are the benchmarks by name, in the order the usage lists them.
var harnesses = []struct {
	name string
	run  harness
}{
	{"retrieval", runRetrieval},
	{"agent", runAgent},
	{"memory", runMemory},
	{"load", runLoad},
	{"scale", runScale},
}

// Run is `capsuled bench NAME [flags]`: it runs the harness NAME with the
// rest of args. An unknown or missing name prints the usage to stderr and
// returns cli.ErrUsage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	names := make([]string, len(harnesses))
	for i, h := range harnesses {
		if len(args) > 0 && args[0] == h.name {
			return h.run(ctx, args[1:], stdout, stderr)
		}
		names[i] = h.name
	}
	fmt.Fprintf(stderr, "usage: capsuled bench %s [flags]   (-h after the name for its flags)\n", strings.Join(names, "|"))
	return cli.ErrUsage
}

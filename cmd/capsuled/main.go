// Command capsuled is the capsuled server and its command-line client. It
// parses flags and wires packages together; the work is in internal/.
//
//	capsuled serve [--addr 127.0.0.1:8080] [--data DIR]   start the server (internal/app)
//	capsuled keys create|list|revoke [--data DIR | --store URL] [--json]  manage API keys in the server's database
//	capsuled capsule|add|query|ask|memory …              client commands against a running server (internal/apiclient)
//	capsuled mcp [--url URL | --data DIR]                 MCP over stdio (internal/mcpserver)
//	capsuled models convert|fetch                         the embedding model
//	capsuled bench retrieval|agent|memory|load …          benchmarks (internal/bench)
//	capsuled conformance validate FILE                    check captured traffic against openapi.yaml
//	capsuled version
//
// Flags may come before or after positional arguments. Every flag can also
// be set through an environment variable named CAPSULED_ plus the flag's name
// in upper case with dashes as underscores (--data → CAPSULED_DATA); a flag
// given on the command line wins (internal/cli).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"capsuled/internal/bench"
	"capsuled/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// command is one subcommand: its one-line help and its entry point.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":       {"start the server", runServe},
		"keys":        {"create, list and revoke API keys (create|list|revoke)", runKeys},
		"conformance": {"validate captured traffic against openapi.yaml (validate FILE)", runConformance},
		"capsule":     {"manage capsules on a running server (create|list|delete)", runCapsule},
		"add":         {"add files, folders or text to a capsule (add NAME PATH...)", runAdd},
		"query":       {"query a capsule (query NAME \"text\")", runQuery},
		"ask":         {"run the svc-1 retrieval loop over a capsule (ask NAME \"question\")", runAsk},
		"models":      {"convert the embedding model to ONNX, or fetch it (convert|fetch)", runModels},
		"reindex":     {"embed the items without vectors now, or move the store to another embedding model", runReindex},
		"indexes":     {"PostgreSQL bulk loads: drop the chunk search indexes, then build them (defer|build)", runIndexes},
		"memory":      {"manage memory namespaces on a running server (namespaces|export|import|delete)", runMemory},
		"mcp":         {"serve MCP over stdio: relay to a server (--url, --key) or serve a data directory (--data)", runMCP},
		"bench":       {"benchmarks: retrieval, agent, memory, load", bench.Run},
		"version": {"print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			_, err := fmt.Fprintln(stdout, version)
			return err
		}},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "capsuled: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, errUsage) {
			return 2
		}
		if errors.Is(err, cli.ErrArgsChecked) {
			fmt.Fprintf(stderr, "capsuled %s: arguments ok\n", args[0])
			return 0
		}
		fmt.Fprintf(stderr, "capsuled %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "capsuled — self-hosted agentic retrieval\n\nUsage: capsuled <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'capsuled <command> -h' for a command's flags. Every flag also reads CAPSULED_<FLAG> from the environment.")
}

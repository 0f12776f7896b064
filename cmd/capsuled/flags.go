package main

import (
	"flag"
	"io"

	"capsuled/internal/cli"
)

// The command's short names for the conventions of internal/cli, which the
// benchmark harnesses (internal/bench) share.

// errUsage marks an error whose message is usage help (exit status 2).
var errUsage = cli.ErrUsage

// newFlags returns a FlagSet for a subcommand that writes its help to stderr.
func newFlags(name string, stderr io.Writer) *flag.FlagSet { return cli.NewFlags(name, stderr) }

// parse parses args (flags may follow positional arguments), then fills every
// flag not given on the command line from its CAPSULED_* environment variable.
func parse(fs *flag.FlagSet, args []string) error { return cli.Parse(fs, args) }

// listFlag is a comma-separated list flag.
type listFlag = cli.ListFlag

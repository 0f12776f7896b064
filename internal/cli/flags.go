// Package cli holds the command-line conventions shared by the capsuled
// command and the benchmark harnesses: flag sets that write their help to the
// command's stderr, flags that may follow positional arguments, every flag
// also read from a CAPSULED_* environment variable, and a comma-separated
// list flag.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrUsage marks an error whose message is usage help (exit status 2).
var ErrUsage = errors.New("usage")

// CheckArgsEnv, set to 1, makes Parse stop every command right after its
// arguments parsed, with ErrArgsChecked, before it does anything: the
// documentation test uses it to check that each command line in the docs
// (benchmarks that run for minutes, servers) is one the command accepts.
const CheckArgsEnv = "CAPSULED_CHECK_ARGS"

// ErrArgsChecked is Parse's answer to valid arguments under CheckArgsEnv.
var ErrArgsChecked = errors.New("arguments checked")

// NewFlags returns a FlagSet for a subcommand ("capsuled NAME") that writes
// its help to stderr.
func NewFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("capsuled "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// EnvName is the environment variable of a flag: data-dir → CAPSULED_DATA_DIR.
func EnvName(flag string) string {
	return "CAPSULED_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Parse parses args, flags and positional arguments in any order (so that
// `ask CAPSULE "question" --trace` works; after "--" every argument is
// positional), leaving the positional ones in fs.Args(). Then it fills every
// flag not given on the command line from its CAPSULED_* environment
// variable. A bad flag or -h returns ErrUsage, the flag package having
// printed the help.
func Parse(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return ErrUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...) // the flag package stopped at "--"
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	// Leave the positional arguments in fs.Args(): "--" stops the parse.
	if err := fs.Parse(append([]string{"--"}, pos...)); err != nil {
		return ErrUsage
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
		}
	})
	if len(errs) == 0 && os.Getenv(CheckArgsEnv) == "1" {
		return ErrArgsChecked
	}
	return errors.Join(errs...)
}

// ListFlag is a comma-separated list flag; blanks around items and empty
// items are dropped.
type ListFlag []string

func (l *ListFlag) String() string { return strings.Join(*l, ",") }

// Set replaces the list with the items of v.
func (l *ListFlag) Set(v string) error {
	*l = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

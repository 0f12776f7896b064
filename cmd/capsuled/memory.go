package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"
)

// runMemory manages memory namespaces on a running server:
//
//	memory namespaces [--json]        list namespaces with their counts
//	memory export NS [--out FILE]     write a namespace as JSON lines
//	memory import NS FILE|-           read JSON lines into a namespace
//	memory delete NS [--yes]          delete a namespace with everything in it
//	                                  (asks first on a terminal; --yes for scripts)
func runMemory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: capsuled memory namespaces|export|import|delete [NS] [FILE] [flags]")
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags("memory "+sub, stderr)
	var cf clientFlags
	cf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON (namespaces)")
	out := fs.String("out", "", "file to write (export; default standard output)")
	yes := fs.Bool("yes", false, "delete without asking (delete)")
	if err := parse(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	need := map[string]int{"namespaces": 0, "export": 1, "import": 2, "delete": 1}
	n, ok := need[sub]
	if !ok || len(pos) != n {
		fmt.Fprintln(stderr, "usage: capsuled memory namespaces | export NS [--out FILE] | import NS FILE | delete NS [--yes]")
		return errUsage
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "namespaces":
		r, err := c.ListMemoryNamespacesWithResponse(ctx)
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return errorOf(r.StatusCode(), r.Body)
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(r.JSON200)
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAMESPACE\tMEMORIES\tTURNS\tFACTS\tNOTES\tFAILURES\tUPDATED")
		for _, ns := range r.JSON200.Data {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", ns.Name, ns.MemoryCount, ns.TurnCount, ns.FactCount, ns.NoteCount, ns.FailureCount, ns.UpdatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	case "export":
		r, err := c.ExportMemoryNamespaceWithResponse(ctx, pos[0])
		if err != nil {
			return err
		}
		if r.StatusCode() != http.StatusOK {
			return errorOf(r.StatusCode(), r.Body)
		}
		if *out == "" {
			_, err = stdout.Write(r.Body)
			return err
		}
		if err := os.WriteFile(*out, r.Body, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "exported %d memories of %s to %s\n", strings.Count(string(r.Body), "\n"), pos[0], *out)
		return nil
	case "import":
		var in io.Reader = os.Stdin
		if pos[1] != "-" {
			f, err := os.Open(pos[1])
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		r, err := c.ImportMemoryNamespaceWithBodyWithResponse(ctx, pos[0], "application/x-ndjson", in)
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return errorOf(r.StatusCode(), r.Body)
		}
		fmt.Fprintf(stdout, "imported %d, skipped %d (already there) into %s\n", r.JSON200.Imported, r.JSON200.Skipped, r.JSON200.Namespace)
		return nil
	default: // delete
		if !*yes {
			if err := confirm(os.Stdin, stderr, fmt.Sprintf("Delete memory namespace %q and every memory in it? This cannot be undone. [y/N] ", pos[0])); err != nil {
				return err
			}
		}
		r, err := c.DeleteMemoryNamespaceWithResponse(ctx, pos[0])
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return errorOf(r.StatusCode(), r.Body)
		}
		fmt.Fprintf(stdout, "deleted namespace %s (%d memories)\n", r.JSON200.Namespace, r.JSON200.Deleted)
		return nil
	}
}

// confirm asks question on a terminal and returns nil for a yes. Without a
// terminal to ask (a script, a pipe) it refuses: destructive commands in
// scripts say --yes.
func confirm(in *os.File, stderr io.Writer, question string) error {
	if !term.IsTerminal(int(in.Fd())) {
		return errors.New("refusing to delete without confirmation: standard input is not a terminal; pass --yes")
	}
	fmt.Fprint(stderr, question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errors.New("not deleted")
	}
	return nil
}

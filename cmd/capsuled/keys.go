package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"capsuled/internal/app"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
	"capsuled/internal/store/sqlite"
)

// runKeys manages API keys directly in a data directory:
//
//	capsuled keys create --data DIR --name NAME --scopes chat,memory [--capsules a,b] [--namespaces x] [--json]
//	capsuled keys list   --data DIR [--json]
//	capsuled keys revoke --data DIR KEY_ID [--json]
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: capsuled keys create|list|revoke --data DIR [flags]")
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags("keys "+sub, stderr)
	dataDir := fs.String("data", "data", "data directory")
	asJSON := fs.Bool("json", false, "print JSON")
	var name string
	var scopes, capsules, namespaces listFlag
	switch sub {
	case "create":
		fs.StringVar(&name, "name", "", "the key's name (required)")
		fs.Var(&scopes, "scopes", "comma-separated scopes: chat, memory, capsules:read, capsules:write, admin (required)")
		fs.Var(&capsules, "capsules", "comma-separated capsule allow-list (empty: all)")
		fs.Var(&namespaces, "namespaces", "comma-separated namespace allow-list (empty: all)")
	case "list", "revoke":
	default:
		fmt.Fprintf(stderr, "capsuled keys: unknown subcommand %q (want create, list or revoke)\n", sub)
		return errUsage
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	db, err := sqlite.Open(ctx, app.Config{DataDir: *dataDir}.DatabasePath())
	if err != nil {
		return err
	}
	defer db.Close()
	svc := auth.New(db.Keys(), nil, nil)

	switch sub {
	case "create":
		in := auth.NewKey{Name: name, Capsules: capsules, Namespaces: namespaces}
		for _, s := range scopes {
			in.Scopes = append(in.Scopes, domain.Scope(s))
		}
		k, secret, err := svc.CreateKey(ctx, in)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(map[string]any{"key": keyJSON(k), "secret": secret})
		}
		fmt.Fprintf(stdout, "Created key %s (%s), scopes %s.\nSecret (shown once, only its hash is stored):\n\n  %s\n", k.ID, k.Name, joinScopes(k.Scopes), secret)
		return nil
	case "list":
		keys, err := svc.ListKeys(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			out := make([]any, 0, len(keys))
			for _, k := range keys {
				out = append(out, keyJSON(k))
			}
			return json.NewEncoder(stdout).Encode(map[string]any{"data": out})
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tLAST USED\tREVOKED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, joinScopes(k.Scopes),
				k.CreatedAt.Format(time.RFC3339), timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt))
		}
		return tw.Flush()
	default: // revoke
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "usage: capsuled keys revoke --data DIR KEY_ID")
			return errUsage
		}
		k, err := svc.RevokeKey(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(keyJSON(k))
		}
		fmt.Fprintf(stdout, "Revoked key %s (%s) at %s.\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
		return nil
	}
}

// keyJSON is a key as the API shows it (the Key schema of openapi.yaml).
func keyJSON(k domain.Key) map[string]any {
	return map[string]any{
		"id": k.ID, "name": k.Name, "prefix": k.Prefix, "scopes": orEmpty(k.Scopes),
		"capsules": orEmpty(k.Capsules), "namespaces": orEmpty(k.Namespaces),
		"created_at": k.CreatedAt, "last_used_at": k.LastUsedAt, "revoked_at": k.RevokedAt,
	}
}

func joinScopes(s []domain.Scope) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = string(v)
	}
	return strings.Join(parts, ",")
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

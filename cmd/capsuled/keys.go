package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"capsuled/internal/app"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
	"capsuled/internal/store/sqlite"
)

// runKeys manages API keys directly in the server's database: the SQLite
// database of serve's data directory (--data, $CAPSULED_DATA, default
// ./data, as serve), or the PostgreSQL database of --store:
//
//	capsuled keys create [--data DIR | --store URL] --name NAME --scopes chat,memory [--capsules a,b] [--namespaces x] [--json] [--init]
//	capsuled keys list   [--data DIR | --store URL] [--json]
//	capsuled keys revoke [--data DIR | --store URL] KEY_ID [--json]
//
// A SQLite database that does not exist is an error (a key made there would
// not work against the running server) unless --init asks for a new one.
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: capsuled keys create|list|revoke [--data DIR | --store URL] [flags]")
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags("keys "+sub, stderr)
	dataDir := fs.String("data", "data", "the server's data directory (as serve's --data)")
	storeURL := fs.String("store", "", "the server's PostgreSQL store URL (as serve's --store), instead of the data directory's SQLite database")
	initDB := fs.Bool("init", false, "create the SQLite database when it does not exist yet")
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
	keys, where, closeDB, err := openKeyStore(ctx, *dataDir, *storeURL, *initDB)
	if err != nil {
		return err
	}
	defer closeDB()
	svc := auth.New(keys, nil, nil)

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
		fmt.Fprintf(stdout, "Created key %s (%s), scopes %s, in %s.\nSecret (shown once, only its hash is stored):\n\n  %s\n", k.ID, k.Name, joinScopes(k.Scopes), where, secret)
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

// openKeyStore opens the key store of the server's database and says which
// database it is (for the messages).
func openKeyStore(ctx context.Context, dataDir, storeURL string, create bool) (auth.Store, string, func() error, error) {
	if strings.HasPrefix(storeURL, "postgres://") || strings.HasPrefix(storeURL, "postgresql://") {
		db, err := postgres.Open(ctx, storeURL, postgres.Options{})
		if err != nil {
			return nil, "", nil, err
		}
		return db.Keys(), "the PostgreSQL store", db.Close, nil
	}
	if storeURL != "" && storeURL != "sqlite" {
		return nil, "", nil, fmt.Errorf("--store %q: want a postgres:// URL or sqlite", storeURL)
	}
	path, err := filepath.Abs(app.Config{DataDir: dataDir}.DatabasePath())
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !create {
		return nil, "", nil, fmt.Errorf("no database at %s: pass the running server's --data DIR (or set CAPSULED_DATA), or --init to create a new one", path)
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, "", nil, err
	}
	return db.Keys(), path, db.Close, nil
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

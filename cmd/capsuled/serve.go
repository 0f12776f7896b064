package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/dustin/go-humanize"

	"capsuled/api"
	"capsuled/internal/app"
)

func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var cfg app.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&cfg.DataDir, "data", "data", "data directory (database, uploads, models)")
	fs.StringVar(&cfg.Store, "store", "sqlite", "storage backend: sqlite (in the data directory)")
	fs.StringVar(&cfg.CapsuleHostSuffix, "capsule-host-suffix", "", "serve capsule <name>.<suffix> hosts (empty: off)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "address browsers use, when not the listen address (behind a TLS proxy: https://host); the dashboard trusts its origin and, for https, sets Secure cookies")
	fs.StringVar(&cfg.SecretsFile, "secrets-file", "", "file of signing keys (\"access-token-signing-key <base64>\", \"dashboard-session-key <base64>\" lines; the first of a name signs, all verify) instead of keys kept in the database; CAPSULED_SECRETS may hold the same lines")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 4<<20, "largest JSON request body")
	fs.Int64Var(&cfg.MaxUploadBytes, "max-upload-bytes", 64<<20, "largest file upload")
	fs.IntVar(&cfg.MaxMessageTokens, "max-message-tokens", api.DefaultMaxMessageTokens, "most tokens (pre-tokens: words and punctuation marks) in one chat message (svc-1 and memory; 413 beyond)")
	fs.IntVar(&cfg.MaxRequestTokens, "max-request-tokens", api.DefaultMaxRequestTokens, "most tokens (pre-tokens) in all the messages of one chat request, svc-1 or memory (413 beyond)")
	fs.IntVar(&cfg.MaxMemoryRequestTokens, "max-memory-request-tokens", api.DefaultMaxMemoryRequestTokens, "most tokens (pre-tokens) in the turns of one memory chat request that the namespace does not hold yet, which it embeds (413 beyond; turns already remembered do not count)")
	fs.IntVar(&cfg.RateLimitRPM, "rate-limit-rpm", 6000, "requests per minute per API key (0: unlimited)")
	fs.IntVar(&cfg.RateLimitTPM, "rate-limit-tpm", 0, "model tokens per minute per API key (0: unlimited)")
	cfg.Capsules.RegisterFlags(fs)
	cfg.Chat.RegisterFlags(fs)
	cfg.Memory.RegisterFlags(fs)
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	memLimit := fs.String("memory-limit", "", "soft limit of this process's Go memory (heap and runtime, e.g. 1.5GiB; Go's runtime/debug.SetMemoryLimit): near it the garbage collector runs more often instead of letting the heap grow to twice what is live. Capsules' vectors files are mapped, not in it, nor SQLite's page cache. Empty: the GOMEMLIMIT environment variable's, else none (the heap then peaks near twice the live data)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := setMemoryLimit(*memLimit); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	cfg.Version = version
	cfg.Secrets = os.Getenv("CAPSULED_SECRETS")
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	secret, created, err := a.Auth().EnsureAdminKey(ctx)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "\n%s\n  capsuled created an admin API key for this fresh data directory.\n  It is shown only this once; only its hash is stored:\n\n    %s\n\n  Use it as: Authorization: Bearer <key>. Create narrower keys with it (POST /v1/keys).\n%s\n\n",
			strings.Repeat("=", 78), secret, strings.Repeat("=", 78))
	}
	return a.Run(ctx)
}

// setMemoryLimit applies --memory-limit: a size such as 2GB or 1.5GiB;
// empty leaves Go's default (GOMEMLIMIT, else none).
func setMemoryLimit(v string) error {
	if v == "" {
		return nil
	}
	n, err := humanize.ParseBytes(v)
	if err != nil || n == 0 || n > 1<<62 {
		return fmt.Errorf("--memory-limit %q: want a size such as 2GB or 1.5GiB", v)
	}
	debug.SetMemoryLimit(int64(n))
	return nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log-format %q: want text or json", format)
	}
}

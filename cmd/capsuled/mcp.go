package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/app"
	"capsuled/internal/mcpserver"
)

// runMCP serves MCP over stdio: relayed to a running server (--url, --key)
// or straight from a data directory (--data).
func runMCP(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlags("mcp", stderr)
	url := fs.String("url", "", "relay stdio to the MCP endpoint of the server at this URL (http://host:port)")
	key := fs.String("key", "", "API key or access token for --url; also CAPSULED_API_KEY")
	var cfg app.Config
	fs.StringVar(&cfg.DataDir, "data", "", "serve this data directory directly instead of relaying (no server needed)")
	fs.StringVar(&cfg.Store, "store", "sqlite", "with --data: storage backend (sqlite, or a postgres:// URL)")
	readWrite := fs.Bool("read-write", false, "with --data: also offer the memory tools that write (remember, forget)")
	cfg.Capsules.RegisterFlags(fs)
	logLevel := fs.String("log-level", "warn", "log level of the messages on stderr: debug, info, warn or error")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, "text", *logLevel)
	if err != nil {
		return err
	}
	stdio := &mcp.StdioTransport{}
	switch {
	case *url != "" && cfg.DataDir != "":
		return fmt.Errorf("mcp: give either --url (relay to a server) or --data (serve a data directory), not both")
	case *url != "":
		if *key == "" {
			*key = os.Getenv("CAPSULED_API_KEY")
		}
		if *key == "" {
			return fmt.Errorf("mcp: --url needs --key (an API key or access token), or CAPSULED_API_KEY")
		}
		endpoint, err := mcpserver.EndpointURL(*url)
		if err != nil {
			return err
		}
		return mcpserver.Relay(ctx, stdio, endpoint, *key, &http.Client{Timeout: 10 * time.Minute})
	case cfg.DataDir != "":
		if _, err := os.Stat(cfg.DataDir); err != nil {
			return fmt.Errorf("mcp: data directory: %w", err)
		}
		cfg.Version = version
		a, err := app.New(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer a.Close()
		err = a.MCP().RunStdio(ctx, stdio, mcpserver.LocalPrincipal(), !*readWrite)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	default:
		return fmt.Errorf("mcp: give --url and --key (relay to a running server) or --data DIR (serve a data directory)")
	}
}

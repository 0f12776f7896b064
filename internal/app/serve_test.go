package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"capsuled/internal/app"
)

// serveApp starts capsuled on cfg and returns its URL and a stop function
// (for a test that stops and restarts the server on one data directory).
func serveApp(t *testing.T, cfg app.Config, log *slog.Logger) (*app.App, string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		a.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	return a, "http://" + l.Addr().String(), func() { cancel(); <-done; a.Close() }
}

// startApp starts capsuled on cfg for the rest of the test, logging
// nowhere, in a temporary data directory unless cfg names one, and returns
// the app (for keys) and its URL (http://host:port).
func startApp(t *testing.T, cfg app.Config) (*app.App, string) {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	a, url, stop := serveApp(t, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(stop)
	return a, url
}

// serveWithAdmin starts capsuled as startApp does and returns its /v1/ base
// URL and the admin key.
func serveWithAdmin(t *testing.T, cfg app.Config) (base, admin string) {
	t.Helper()
	a, url := startApp(t, cfg)
	admin, _, err := a.Auth().EnsureAdminKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return url + "/v1/", admin
}

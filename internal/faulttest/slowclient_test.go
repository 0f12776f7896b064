package faulttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"capsuled/internal/app"
)

// Time-outs of the in-process server of the slow-client tests.
const (
	readHeaderTimeout = 1 * time.Second
	readTimeout       = 2 * time.Second
	idleTimeout       = 2 * time.Second
	// slack covers scheduling on a busy 2-core machine under -race.
	slack = 3 * time.Second
)

// startApp runs the real app in-process with small time-outs and returns its
// address and an admin key.
func startApp(t *testing.T) (addr, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := app.Config{
		DataDir:           t.TempDir(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      5 * time.Second,
		IdleTimeout:       idleTimeout,
		ShutdownTimeout:   time.Second,
	}
	cfg.Capsules.Embedder = "off"
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	admin, _, err = a.Auth().EnsureAdminKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
		a.Close()
	})
	return l.Addr().String(), admin
}

// closedWithin reads from conn until the server closes it and returns how
// long that took from start, failing after limit.
func closedWithin(t *testing.T, conn net.Conn, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	conn.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for over %v", limit)
	}
	return time.Since(start)
}

// TestSlowAndHalfOpenClients checks that the server closes connections that
// trickle their header (slowloris), stop in the middle of a body, never send
// anything, or sit idle after a request, within its configured time-outs,
// while another client is served normally throughout.
func TestSlowAndHalfOpenClients(t *testing.T) {
	t.Parallel()
	addr, admin := startApp(t)

	cases := []struct {
		name  string
		run   func(conn net.Conn) // what the client sends, in the background
		limit time.Duration       // the time-out that must close it
	}{
		{"slowloris header, one byte a second", func(conn net.Conn) {
			fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
			for i := 0; i < 30; i++ {
				if _, err := conn.Write([]byte("X")); err != nil {
					return
				}
				time.Sleep(time.Second)
			}
		}, readHeaderTimeout},
		{"half a body, then silence", func(conn net.Conn) {
			fmt.Fprintf(conn, "POST /v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":\"half", admin)
		}, readTimeout},
		{"connect and send nothing", func(net.Conn) {}, readHeaderTimeout},
		{"idle keep-alive after a request", func(conn net.Conn) {
			fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		}, idleTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			go tc.run(conn)
			took := closedWithin(t, conn, start, tc.limit+slack)
			t.Logf("closed after %v (time-out %v)", took.Round(10*time.Millisecond), tc.limit)
		})
	}

	// Meanwhile a normal client is served, several times over.
	t.Run("normal client meanwhile", func(t *testing.T) {
		t.Parallel()
		c := &http.Client{Timeout: 2 * time.Second}
		for i := 0; i < 8; i++ {
			resp, err := c.Get("http://" + addr + "/healthz")
			if err != nil {
				t.Fatalf("a normal client was not served: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("healthz: %d", resp.StatusCode)
			}
			time.Sleep(400 * time.Millisecond)
		}
	})
}

// TestManySlowClientsDoNotStarveOthers opens many slowloris connections at
// once and checks that normal requests keep being answered quickly.
func TestManySlowClientsDoNotStarveOthers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("opens 200 connections; skipped with -short")
	}
	addr, _ := startApp(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		conns = append(conns, conn)
	}
	c := &http.Client{Timeout: 2 * time.Second}
	for i := 0; i < 5; i++ {
		start := time.Now()
		resp, err := c.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("with %d slow clients, a normal client was not served: %v", len(conns), err)
		}
		resp.Body.Close()
		if d := time.Since(start); d > time.Second {
			t.Errorf("with %d slow clients, healthz took %v", len(conns), d)
		}
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"capsuled/gen"
)

// clientFlags are the flags of every command that talks to a running server.
type clientFlags struct {
	url, key string
	timeout  time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "server URL")
	fs.StringVar(&c.key, "key", "", "API key (Authorization: Bearer); also CAPSULED_API_KEY")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "time limit of each request")
}

// client returns the generated API client for the server, with the key.
func (c *clientFlags) client() (*gen.ClientWithResponses, error) {
	if c.key == "" {
		c.key = os.Getenv("CAPSULED_API_KEY")
	}
	if c.key == "" {
		return nil, errors.New("no API key: pass --key or set CAPSULED_API_KEY")
	}
	return gen.NewClientWithResponses(strings.TrimRight(c.url, "/"),
		gen.WithHTTPClient(&http.Client{Timeout: c.timeout}),
		gen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+c.key)
			return nil
		}))
}

// apiError renders an error response of the API for the terminal.
func apiError(status int, e *gen.ErrorResponse, raw []byte) error {
	if e != nil {
		msg := e.Error.Message
		if e.Error.Param != nil {
			msg = *e.Error.Param + ": " + msg
		}
		return fmt.Errorf("%d %s: %s", status, e.Error.Type, msg)
	}
	return fmt.Errorf("unexpected response %d: %.300s", status, raw)
}

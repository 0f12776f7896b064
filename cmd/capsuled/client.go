package main

import (
	"errors"
	"flag"
	"os"
	"time"

	"capsuled/gen"
	"capsuled/internal/apiclient"
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
	return apiclient.New(c.url, c.key, c.timeout)
}

// errorOf renders a non-2xx response body.
func errorOf(status int, body []byte) error { return apiclient.Error(status, body) }

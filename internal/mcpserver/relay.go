package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EndpointURL is the /mcp endpoint of a server given by its base URL
// (http://host:port, with or without a path ending in /mcp).
func EndpointURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("server URL %q: want http://host:port or https://host", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	if !strings.HasSuffix(u.Path, "/mcp") {
		u.Path += "/mcp"
	}
	return u.String(), nil
}

// Relay passes MCP messages between a local transport (stdio, for a desktop
// client that launches a command) and a server's streamable HTTP endpoint,
// authenticating with key, until either side closes or ctx ends. A message
// the server cannot take (a refused credential, an unreachable server) is
// answered to the local client as a JSON-RPC error of its request.
func Relay(ctx context.Context, local mcp.Transport, endpoint, key string, client *http.Client) error {
	if client == nil {
		client = http.DefaultClient
	}
	hc := *client
	hc.Transport = bearerTransport{key: key, next: client.Transport}
	remote, err := (&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &hc, DisableStandaloneSSE: true}).Connect(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	defer remote.Close()
	conn, err := local.Connect(ctx)
	if err != nil {
		return fmt.Errorf("open the local transport: %w", err)
	}
	defer conn.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pending := &pendingCalls{ids: map[jsonrpc.ID]bool{}, idle: make(chan struct{}, 1)}
	errc := make(chan error, 2)
	go func() { // local → server
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				// The client closed its input: deliver the answers it
				// still waits for, then end.
				if endOf("", err) == nil {
					pending.wait(ctx, relayDrain)
				}
				errc <- endOf("local client", err)
				return
			}
			req, isCall := msg.(*jsonrpc.Request)
			isCall = isCall && req.IsCall()
			if isCall {
				pending.add(req.ID)
			}
			if err := remote.Write(ctx, msg); err != nil {
				if !isCall {
					continue // a notification: nobody waits for an answer
				}
				pending.done(req.ID)
				resp := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: "capsuled relay: " + relayMessage(err)}}
				if err := conn.Write(ctx, resp); err != nil {
					errc <- endOf("local client", err)
					return
				}
			}
		}
	}()
	go func() { // server → local
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				errc <- endOf("server", err)
				return
			}
			if err := conn.Write(ctx, msg); err != nil {
				errc <- endOf("local client", err)
				return
			}
			if resp, ok := msg.(*jsonrpc.Response); ok {
				pending.done(resp.ID)
			}
		}
	}()
	err = <-errc
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// relayDrain bounds how long the relay waits, after the local client closed
// its input, for the answers to the requests it sent.
const relayDrain = 2 * time.Minute

// pendingCalls are the requests relayed to the server and not answered yet.
type pendingCalls struct {
	mu   sync.Mutex
	ids  map[jsonrpc.ID]bool
	idle chan struct{} // signalled when ids becomes empty
}

func (p *pendingCalls) add(id jsonrpc.ID) {
	p.mu.Lock()
	p.ids[id] = true
	p.mu.Unlock()
}

func (p *pendingCalls) done(id jsonrpc.ID) {
	p.mu.Lock()
	delete(p.ids, id)
	empty := len(p.ids) == 0
	p.mu.Unlock()
	if empty {
		select {
		case p.idle <- struct{}{}:
		default:
		}
	}
}

// wait returns when no call is pending, after d, or when ctx ends.
func (p *pendingCalls) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		p.mu.Lock()
		empty := len(p.ids) == 0
		p.mu.Unlock()
		if empty {
			return
		}
		select {
		case <-p.idle:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// endOf says which side ended the relay; a clean end of input is no error.
func endOf(side string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("%s: %w", side, err)
}

// relayMessage is the text of a failed POST, with what to do about the
// refusals a user can fix (the SDK reports only the HTTP status text).
func relayMessage(err error) string {
	s := err.Error()
	switch {
	case strings.HasSuffix(s, http.StatusText(http.StatusUnauthorized)):
		s += " (401: the server refused the key; check --key or CAPSULED_API_KEY)"
	case strings.HasSuffix(s, http.StatusText(http.StatusForbidden)):
		s += " (403: the key has neither the capsules:read nor the memory scope)"
	case strings.HasSuffix(s, http.StatusText(http.StatusTooManyRequests)):
		s += " (429: the key is over its rate limit; retry later)"
	}
	return s
}

// bearerTransport adds the Authorization header to every request.
type bearerTransport struct {
	key  string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

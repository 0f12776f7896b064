package oai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"capsuled/internal/domain"
)

// Config configures a Client.
type Config struct {
	// URL is the server's base URL; paths are appended to it (for an
	// OpenAI-compatible server it ends in /v1). Required.
	URL string
	// Key, when set, is sent as "Authorization: Bearer <key>".
	Key string
	// Timeout bounds each call, the whole reply included. Default 60s.
	Timeout time.Duration
	// HTTP is the HTTP client. Default: one with no overall time-out
	// (Timeout bounds each call) and a 10 s dial time-out.
	HTTP *http.Client
	// Name names the server in error messages, e.g. "the upstream engine".
	// Default "the upstream server".
	Name string
	// MaxReply bounds a reply's size in bytes. Default 32 MiB.
	MaxReply int64
}

// Client posts requests to one OpenAI-compatible server. Safe for
// concurrent use.
type Client struct {
	cfg  Config
	base string
}

// New checks the configuration and returns a Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want http(s)://host[:port][/path]", cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "the upstream server"
	}
	if cfg.MaxReply <= 0 {
		cfg.MaxReply = 32 << 20
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return &Client{cfg: cfg, base: strings.TrimRight(cfg.URL, "/")}, nil
}

// URL is the base URL.
func (c *Client) URL() string { return c.base }

// Close releases idle connections.
func (c *Client) Close() { c.cfg.HTTP.CloseIdleConnections() }

// PostJSON posts body (marshalled as JSON) to path and decodes the reply
// into out.
func (c *Client) PostJSON(ctx context.Context, path string, body, out any) error {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.post(ctx, rctx, path, body, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := c.read(resp.Body)
	if err != nil {
		return c.Transport(ctx, rctx, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return c.BadReply(fmt.Errorf("reply is not the expected JSON: %w", err))
	}
	return nil
}

// PostStream posts body to path asking for a server-sent-event stream and
// calls event with the data of each event until "data: [DONE]". A stream
// that ends before [DONE] is an upstream_truncated error. A server that
// answers with one JSON object instead (it ignored "stream") has event
// called once with that object.
func (c *Client) PostStream(ctx context.Context, path string, body any, event func(data []byte) error) error {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.post(ctx, rctx, path, body, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, err := c.read(resp.Body)
		if err != nil {
			return c.Transport(ctx, rctx, err)
		}
		return event(raw)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, c.cfg.MaxReply))
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue // comments, event names, blank separators
		}
		data := bytes.TrimSpace(line[len("data:"):])
		if string(data) == "[DONE]" {
			return nil
		}
		if err := event(data); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return c.Transport(ctx, rctx, err)
	}
	if err := rctx.Err(); err != nil {
		return c.Transport(ctx, rctx, err)
	}
	return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_truncated",
		Message: c.cfg.Name + " ended its stream before [DONE]"}
}

// post sends the request and returns a 200 response; any other status is
// mapped by Status.
func (c *Client) post(ctx, rctx context.Context, path string, body any, stream bool) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode the request to %s: %w", c.cfg.Name, err)
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("request to %s: %w", c.cfg.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if c.cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Key)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, c.Transport(ctx, rctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, c.Status(resp.StatusCode, resp.Header, raw)
	}
	return resp, nil
}

func (c *Client) read(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, c.cfg.MaxReply+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > c.cfg.MaxReply {
		return nil, c.BadReply(fmt.Errorf("reply larger than %d bytes", c.cfg.MaxReply))
	}
	return raw, nil
}

// defaultRetry is the Retry-After, in seconds, of a 429 or 503 whose server
// gave none.
const defaultRetry = 5

// Status maps an upstream's non-200 answer (see the package comment's
// table), quoting the server's error message.
func (c *Client) Status(status int, h http.Header, raw []byte) *domain.Error {
	msg := ErrorMessage(raw)
	say := func(what string) string {
		if msg == "" {
			return fmt.Sprintf("%s %s (%d)", c.cfg.Name, what, status)
		}
		return fmt.Sprintf("%s %s (%d): %s", c.cfg.Name, what, status, msg)
	}
	retry := func() int {
		if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s > 0 {
			return s
		}
		if t, err := http.ParseTime(h.Get("Retry-After")); err == nil {
			if s := int(time.Until(t).Seconds() + 0.999); s > 0 {
				return s
			}
		}
		return defaultRetry
	}
	switch {
	case status == http.StatusTooManyRequests:
		return &domain.Error{Kind: domain.KindRateLimited, Code: "upstream_rate_limited", Message: say("is rate limiting"), RetryAfter: retry()}
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return &domain.Error{Kind: domain.KindInvalid, Code: "upstream_rejected", Message: say("rejected the request")}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_auth", Message: say("refused capsuled's credentials; check the configured key")}
	case status == http.StatusNotFound:
		return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_not_found", Message: say("does not serve the configured model or route")}
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return &domain.Error{Kind: domain.KindTimeout, Code: "upstream_timeout", Message: say("timed out")}
	case status == http.StatusBadGateway || status == http.StatusServiceUnavailable:
		return &domain.Error{Kind: domain.KindUnavailable, Code: "upstream_unavailable", Message: say("is unavailable"), RetryAfter: retry()}
	default:
		return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: say("failed")}
	}
}

// Transport maps a failure to get or read a reply. parent is the caller's
// context, rctx the call's (bounded by the time-out).
func (c *Client) Transport(parent, rctx context.Context, err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	if perr := parent.Err(); perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
		return perr // the caller went away
	}
	var ne net.Error
	var dns *net.DNSError
	switch {
	case errors.Is(rctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return &domain.Error{Kind: domain.KindTimeout, Code: "upstream_timeout", Message: c.cfg.Name + " did not answer in time", Err: err}
	case errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return &domain.Error{Kind: domain.KindUnavailable, Code: "upstream_unavailable", Message: c.cfg.Name + " cannot be reached", RetryAfter: defaultRetry, Err: err}
	default:
		return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: c.cfg.Name + " reset the connection or failed", Err: err}
	}
}

// BadReply is the error of a reply that is not what the protocol says.
func (c *Client) BadReply(err error) *domain.Error {
	return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_bad_reply", Message: c.cfg.Name + " sent a reply that does not follow the protocol", Err: err}
}

// ErrorEvent is the error of an {"error": …} object inside a 200 reply or a
// stream.
func (c *Client) ErrorEvent(msg string) *domain.Error {
	return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_error", Message: c.cfg.Name + " failed: " + truncate(msg)}
}

// ErrorMessage extracts a server's error message from an error body:
// {"error": {"message": …}}, {"error": "…"}, {"message": …}, {"detail": …}
// or a short plain body.
func ErrorMessage(raw []byte) string {
	var eb struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(raw, &eb) == nil {
		if len(eb.Error) > 0 {
			var obj struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(eb.Error, &obj) == nil && obj.Message != "" {
				return truncate(obj.Message)
			}
			var s string
			if json.Unmarshal(eb.Error, &s) == nil && s != "" {
				return truncate(s)
			}
		}
		if eb.Message != "" {
			return truncate(eb.Message)
		}
		if s, ok := eb.Detail.(string); ok && s != "" {
			return truncate(s)
		}
	}
	return truncate(strings.TrimSpace(string(raw)))
}

func truncate(s string) string {
	if len(s) > 500 {
		return strings.ToValidUTF8(s[:500], "") + "…"
	}
	return s
}

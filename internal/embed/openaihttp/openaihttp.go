package openaihttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/vecmath"
)

// maxResponse bounds a response body.
const maxResponse = 256 << 20

// Config configures the client.
type Config struct {
	// URL is the server's base URL, e.g. "http://localhost:8000"; a
	// trailing "/v1" is accepted. Required.
	URL string
	// Model is the model name sent in every request. Required.
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Dim is the expected dimension. When 0, New asks the server once to
	// learn it.
	Dim int
	// ModelID is what ModelID returns, the embedding-cache key. Default
	// "openai:" + Model.
	ModelID string
	// BatchSize is the most texts per request. Default 64.
	BatchSize int
	// Timeout bounds each request. Default 30s.
	Timeout time.Duration
	// HTTPClient is the client to use. Default: a client with no overall
	// time-out (Timeout applies per request).
	HTTPClient *http.Client
}

func (c Config) withDefaults() Config {
	c.URL = strings.TrimRight(c.URL, "/")
	c.URL = strings.TrimSuffix(c.URL, "/v1")
	if c.ModelID == "" {
		c.ModelID = "openai:" + c.Model
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

// Embedder calls an OpenAI-compatible embeddings endpoint. Safe for
// concurrent use.
type Embedder struct {
	cfg Config
	dim atomic.Int64
}

// New checks the configuration and, when Config.Dim is 0, embeds one probe
// text to learn the dimension.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	cfg = cfg.withDefaults()
	if cfg.URL == "" || cfg.Model == "" {
		return nil, errors.New("openaihttp: Config.URL and Config.Model are required")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("openaihttp: URL %q is not http(s)", cfg.URL)
	}
	e := &Embedder{cfg: cfg}
	e.dim.Store(int64(cfg.Dim))
	if cfg.Dim == 0 {
		vs, err := e.Embed(ctx, []string{"dimension probe"})
		if err != nil {
			return nil, fmt.Errorf("openaihttp: probing %s for the dimension: %w", cfg.URL, err)
		}
		e.dim.Store(int64(len(vs[0])))
	}
	return e, nil
}

// Dim is the embedding width.
func (e *Embedder) Dim() int { return int(e.dim.Load()) }

// ModelID names the remote model, for embedding caches.
func (e *Embedder) ModelID() string { return e.cfg.ModelID }

// Close releases idle connections.
func (e *Embedder) Close() error {
	e.cfg.HTTPClient.CloseIdleConnections()
	return nil
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

type errorBody struct {
	Error json.RawMessage `json:"error"`
}

// Embed returns one L2-normalised vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := 0; i < len(texts); i += e.cfg.BatchSize {
		vs, err := e.call(ctx, texts[i:min(i+e.cfg.BatchSize, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (e *Embedder) call(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: e.cfg.Model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("openaihttp: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, e.cfg.URL+"/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openaihttp: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, e.transportError(ctx, rctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, e.transportError(ctx, rctx, err)
	}
	if len(raw) > maxResponse {
		return nil, e.upstream("response larger than %d bytes", maxResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, e.statusError(resp, raw)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, e.upstream("response is not an embeddings JSON object").Wrap(err)
	}
	if len(r.Data) != len(texts) {
		return nil, e.upstream("%d embeddings for %d inputs", len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	want := e.Dim()
	for pos, d := range r.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= len(out) || out[i] != nil {
			return nil, e.upstream("embedding index %d out of range or repeated", i)
		}
		if len(d.Embedding) == 0 || (want > 0 && len(d.Embedding) != want) {
			return nil, e.upstream("embedding of dimension %d, want %d", len(d.Embedding), want)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, e.upstream("embedding %d holds a non-finite value", i)
			}
			v[j] = float32(x)
		}
		if vecmath.Norm(v) == 0 {
			return nil, e.upstream("embedding %d is all zeros", i)
		}
		vecmath.Normalize(v)
		out[i] = v
	}
	return out, nil
}

func (e *Embedder) upstream(format string, args ...any) *domain.Error {
	return &domain.Error{Kind: domain.KindUpstream, Code: "embedding_upstream_error",
		Message: "embedding server " + e.cfg.URL + ": " + fmt.Sprintf(format, args...)}
}

// transportError classifies a failure to get a response.
func (e *Embedder) transportError(parent, rctx context.Context, err error) error {
	if parent.Err() != nil {
		return parent.Err()
	}
	var ne net.Error
	if errors.Is(rctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &domain.Error{Kind: domain.KindTimeout, Code: "embedding_timeout",
			Message: fmt.Sprintf("embedding server %s did not answer within %v", e.cfg.URL, e.cfg.Timeout), Err: err}
	}
	return &domain.Error{Kind: domain.KindUnavailable, Code: "embedding_unavailable",
		Message: fmt.Sprintf("embedding server %s cannot be reached", e.cfg.URL), Err: err}
}

// statusError classifies a non-200 answer, quoting the server's message.
func (e *Embedder) statusError(resp *http.Response, raw []byte) error {
	msg := upstreamMessage(raw)
	text := fmt.Sprintf("embedding server %s answered %d", e.cfg.URL, resp.StatusCode)
	if msg != "" {
		text += ": " + msg
	}
	de := &domain.Error{Kind: domain.KindUpstream, Code: "embedding_upstream_error", Message: text}
	switch resp.StatusCode {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway:
		de.Kind, de.Code = domain.KindUnavailable, "embedding_unavailable"
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			de.RetryAfter = s
		}
	case http.StatusGatewayTimeout:
		de.Kind, de.Code = domain.KindTimeout, "embedding_timeout"
	}
	return de
}

// upstreamMessage extracts {"error": {"message": ...}} or {"error": "..."}
// (or a short plain body) from an error response.
func upstreamMessage(raw []byte) string {
	var eb errorBody
	if json.Unmarshal(raw, &eb) == nil && len(eb.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(eb.Error, &obj) == nil && obj.Message != "" {
			return truncate(obj.Message)
		}
		var s string
		if json.Unmarshal(eb.Error, &s) == nil {
			return truncate(s)
		}
	}
	var detail struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(raw, &detail) == nil && detail.Detail != "" {
		return truncate(detail.Detail)
	}
	return truncate(strings.TrimSpace(string(raw)))
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

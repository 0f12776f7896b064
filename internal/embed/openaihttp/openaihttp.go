package openaihttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/oai"
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

// Embedder calls an OpenAI-compatible embeddings endpoint through
// capsuled's one client of such servers (internal/oai, which maps the
// server's failures). Safe for concurrent use.
type Embedder struct {
	cfg    Config
	client *oai.Client
	dim    atomic.Int64
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
	client, err := oai.New(oai.Config{URL: cfg.URL + "/v1", Key: cfg.APIKey, Timeout: cfg.Timeout, HTTP: cfg.HTTPClient,
		Name: "embedding server " + cfg.URL, MaxReply: maxResponse})
	if err != nil {
		return nil, fmt.Errorf("openaihttp: %w", err)
	}
	e := &Embedder{cfg: cfg, client: client}
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
	data, err := e.client.Embeddings(ctx, e.cfg.Model, texts)
	if err != nil {
		return nil, err
	}
	r := struct{ Data []oai.Embedding }{data}
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
	return &domain.Error{Kind: domain.KindUpstream, Code: "upstream_bad_reply",
		Message: "embedding server " + e.cfg.URL + ": " + fmt.Sprintf(format, args...)}
}

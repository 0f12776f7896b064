package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"capsuled/internal/domain"
)

// reqInfo is what the middleware layers learn about a request, shared through
// its context: the outermost layer creates it, inner layers fill it in.
type reqInfo struct {
	ID        string
	Route     string // the operation id, or "unmatched"
	Principal *domain.Principal
	Capsule   string // the capsule the route addresses, if any
	Namespace string // the namespace the route addresses, if any
	Body      []byte // the request body as received (JSON bodies only)
	// Value is the JSON body as the spec's validation decoded it (objects
	// are map[string]any, numbers json.Number); nil without a JSON body.
	Value any
}

type ctxKey struct{}

func info(ctx context.Context) *reqInfo {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

func requestID(ctx context.Context) string { return info(ctx).ID }

// principal is the authenticated caller of the request (nil on public routes).
func principal(ctx context.Context) *domain.Principal { return info(ctx).Principal }

// statusWriter records the status and size of a response and keeps the
// Flusher of the writer it wraps, for streaming.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// metrics are the server's Prometheus collectors, on a registry of its own.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inflight prometheus.Gauge
}

func newMetrics(ingest IngestCounter) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capsuled_http_requests_total",
			Help: "HTTP requests by route (operation id), method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "capsuled_http_request_duration_seconds",
			Help:    "HTTP request latency by route (operation id).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "capsuled_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.inflight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if ingest != nil {
		m.registry.MustRegister(ingestCollectors(ingest)...)
	}
	return m
}

// ingestCollectors export the ingestion counters, read at each scrape.
func ingestCollectors(ingest IngestCounter) []prometheus.Collector {
	items := func(outcome string, count func(domain.IngestCounts) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "capsuled_ingest_items_total",
			Help:        "Items this process's ingestion jobs finished, by outcome (indexed or failed).",
			ConstLabels: prometheus.Labels{"outcome": outcome},
		}, func() float64 { return float64(count(ingest.IngestCounts())) })
	}
	return []prometheus.Collector{
		items("indexed", func(c domain.IngestCounts) int64 { return c.Indexed }),
		items("failed", func(c domain.IngestCounts) int64 { return c.Failed }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "capsuled_ingest_chunks_total",
			Help: "Chunks of the items this process's ingestion jobs indexed.",
		}, func() float64 { return float64(ingest.IngestCounts().Chunks) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "capsuled_ingest_seconds_total",
			Help: "Time this process's ingestion jobs spent on the items they finished (extraction, chunking, embedding, writing).",
		}, func() float64 { return ingest.IngestCounts().Seconds }),
	}
}

// observe wraps next with request ids, panic recovery, the access log and metrics.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{ID: newRequestID(), Route: "unmatched"}
		ctx := context.WithValue(r.Context(), ctxKey{}, ri)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		sw.Header().Set("X-Request-Id", ri.ID)
		// No API response is meant to be rendered by a browser as anything
		// but its declared type.
		sw.Header().Set("X-Content-Type-Options", "nosniff")
		s.metrics.inflight.Inc()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(ctx, "panic", "request_id", ri.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if sw.status == 0 {
					writeError(sw, r, s.log, errors.New("panic"))
				}
			}
			s.metrics.inflight.Dec()
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			s.metrics.requests.WithLabelValues(ri.Route, r.Method, strconv.Itoa(status)).Inc()
			s.metrics.latency.WithLabelValues(ri.Route).Observe(d.Seconds())
			attrs := []any{"request_id", ri.ID, "method", r.Method, "path", r.URL.Path, "route", ri.Route,
				"status", status, "bytes", sw.bytes, "duration_ms", float64(d.Microseconds()) / 1000}
			if ri.Principal != nil {
				attrs = append(attrs, "key_id", ri.Principal.KeyID)
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			s.log.Log(ctx, level, "request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// Observe wraps a handler served beside the API (the dashboard, MCP) in the
// API's observe layer, under route: it gets request ids, panic recovery, the
// access log and the HTTP metrics as every operation does. Its own
// authentication stays its own (the access log names no key for it).
func (s *Server) Observe(route string, h http.Handler) http.Handler {
	return s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r.Context()).Route = route
		h.ServeHTTP(w, r)
	}))
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"capsuled/internal/capsule"
	"capsuled/internal/dashboard"
	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

// mountDashboard serves the dashboard at /dashboard in front of the API
// handler, which gets every other path.
//
// capsules and mem are the services built for the API (nil, or whatever
// newCapsules and newMemory returned): the dashboard uses them through
// adapters when they are the real services. observe puts the dashboard in
// the API's observe layer (request ids, access log, metrics).
func (a *App) mountDashboard(apiHandler http.Handler, observe func(route string, h http.Handler) http.Handler, services ...any) (http.Handler, error) {
	var capsules, mem any
	if len(services) == 2 {
		capsules, mem = services[0], services[1]
	}
	d, err := dashboard.New(dashboard.Config{
		MaxUploadBytes: a.cfg.MaxUploadBytes,
		PublicURL:      a.cfg.PublicURL,
		SessionKeys:    a.secrets.Session,
		Version:        a.cfg.Version,
		Now:            a.cfg.Now,
	}, dashboard.Deps{
		Auth:     a.auth,
		Secrets:  a.db.Keys(),
		Capsules: dashboardCapsules(capsules),
		Memory:   dashboardMemory(mem),
		Status:   a.dashboardStatus(apiHandler, capsules),
	}, a.log)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	mux := http.NewServeMux()
	od := observe("dashboard", d)
	mux.Handle(dashboard.Prefix, od)
	mux.Handle(dashboard.Prefix+"/", od)
	mux.Handle("/", apiHandler)
	return mux, nil
}

// dashboardCapsules is the capsule service as the dashboard uses it (nil:
// its pages say capsules are not available).
func dashboardCapsules(svc any) dashboard.Capsules {
	if c, ok := svc.(*capsule.Service); ok && c != nil {
		return capsulePages{c}
	}
	return nil
}

// capsulePages adapts the capsule service to the dashboard.
type capsulePages struct{ s *capsule.Service }

// maxListedItems bounds a capsule page's item list.
const maxListedItems = 2000

func (c capsulePages) ListCapsules(ctx context.Context) ([]domain.Capsule, error) {
	return c.s.ListCapsules(ctx)
}

func (c capsulePages) CreateCapsule(ctx context.Context, name, description string) (domain.Capsule, error) {
	return c.s.CreateCapsule(ctx, name, description)
}

func (c capsulePages) DeleteCapsule(ctx context.Context, name string) error {
	return c.s.DeleteCapsule(ctx, name)
}

func (c capsulePages) ListItems(ctx context.Context, name string) ([]domain.Item, error) {
	var out []domain.Item
	after := ""
	for len(out) < maxListedItems {
		page, next, err := c.s.ListItems(ctx, name, "", after, 200)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			break
		}
		after = next
	}
	return out, nil
}

func (c capsulePages) AddFile(ctx context.Context, name string, f dashboard.Upload) (domain.Item, error) {
	up, err := c.s.StageFile(f.Body)
	if err != nil {
		return domain.Item{}, err
	}
	defer up.Discard()
	it, _, err := c.s.AddItem(ctx, name, capsule.NewItem{Kind: domain.ItemFile, File: up, FileName: f.FileName, FileType: f.FileType})
	return it, err
}

func (c capsulePages) DeleteItem(ctx context.Context, name, id string) error {
	return c.s.DeleteItem(ctx, name, id)
}

func (c capsulePages) Query(ctx context.Context, name string, q domain.Query) ([]domain.Hit, error) {
	return c.s.Query(ctx, name, q)
}

// dashboardMemory is the memory service as the dashboard uses it (nil: its
// pages say memory is not available).
func dashboardMemory(svc any) dashboard.Memory {
	if m, ok := svc.(*memory.Service); ok && m != nil {
		return memoryPages{m}
	}
	return nil
}

// memoryPages adapts the memory service to the dashboard.
type memoryPages struct{ s *memory.Service }

func (m memoryPages) ListNamespaces(ctx context.Context) ([]domain.Namespace, error) {
	st, err := m.s.Namespaces(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Namespace, len(st))
	for i, n := range st {
		out[i] = n.Namespace
	}
	return out, nil
}

func (m memoryPages) ListMemories(ctx context.Context, ns, search string, limit int) ([]domain.Memory, error) {
	found, _, err := m.s.List(ctx, ns, memory.ListOptions{Query: search, Limit: limit, IncludeSuperseded: true})
	if err != nil {
		return nil, err
	}
	out := make([]domain.Memory, len(found))
	for i, f := range found {
		out[i] = f.Memory
	}
	return out, nil
}

func (m memoryPages) DeleteMemory(ctx context.Context, ns, id string) error {
	return m.s.Delete(ctx, ns, id)
}

func (m memoryPages) DeleteNamespace(ctx context.Context, ns string) error {
	_, err := m.s.DeleteNamespace(ctx, ns)
	return err
}

// exportedMemory is one line of an export: openapi.yaml's Memory object, which
// POST /v1/memory/namespaces/{namespace}/import reads back.
type exportedMemory struct {
	ID           string         `json:"id"`
	Namespace    string         `json:"namespace"`
	Kind         string         `json:"kind"`
	Role         *string        `json:"role"`
	Content      string         `json:"content"`
	Conversation *string        `json:"conversation_id"`
	Metadata     map[string]any `json:"metadata"`
	CreatedAt    time.Time      `json:"created_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
	ValidFrom    time.Time      `json:"valid_from"`
	InvalidFrom  *time.Time     `json:"invalid_from"`
	SupersededBy *string        `json:"superseded_by"`
	ExpiresAt    *time.Time     `json:"expires_at"`
}

func (m memoryPages) ExportNamespace(ctx context.Context, ns string, w io.Writer) error {
	enc := json.NewEncoder(w)
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return m.s.Export(ctx, ns, func(mm domain.Memory) error {
		md := mm.Metadata
		if md == nil {
			md = map[string]any{}
		}
		return enc.Encode(exportedMemory{
			ID: mm.ID, Namespace: mm.Namespace, Kind: string(mm.Kind), Role: opt(mm.Role), Content: mm.Content,
			Conversation: opt(mm.Conversation), Metadata: md, CreatedAt: mm.CreatedAt, UpdatedAt: mm.UpdatedAt,
			ValidFrom: mm.ValidFrom, InvalidFrom: mm.InvalidFrom, SupersededBy: opt(mm.SupersededBy), ExpiresAt: mm.ExpiresAt,
		})
	})
}

// dashboardStatus reports the server's status from the store check and the
// API's own /metrics, read in-process.
func (a *App) dashboardStatus(apiHandler http.Handler, capsules any) dashboard.StatusFunc {
	return func(ctx context.Context) dashboard.Status {
		st := dashboard.Status{
			Version: a.cfg.Version,
			Store:   "sqlite (" + a.cfg.DatabasePath() + ")",
			Engines: a.engineStatus(ctx),
		}
		if a.db.name != "sqlite" {
			st.Store = a.db.name
		}
		if c, ok := capsules.(*capsule.Service); ok && c != nil {
			st.Semantic = c.Semantic()
			st.Embedder = "none (keyword search only)"
			if st.Semantic && a.embedderInfo != "" {
				st.Embedder = a.embedderInfo
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		check := dashboard.Check{Name: "store", OK: true}
		if err := a.db.Ping(cctx); err != nil {
			check.OK, check.Detail = false, err.Error()
		}
		st.Checks = append([]dashboard.Check{check}, st.Checks...)
		if c, ok := capsules.(*capsule.Service); ok && c != nil {
			st.Checks = append(st.Checks, vectorCheck(cctx, c))
		}
		st.Figures = append(st.Figures, metricFigures(ctx, apiHandler)...)
		return st
	}
}

// vectorCheck is the status page's row on the capsules' vectors: the
// model that made them and the items still waiting for theirs.
func vectorCheck(ctx context.Context, c *capsule.Service) dashboard.Check {
	ch := dashboard.Check{Name: "vectors", OK: true}
	st, err := c.VectorStatus(ctx)
	switch {
	case err != nil:
		ch.OK, ch.Detail = false, err.Error()
	case !st.Semantic && st.ItemsWithout > 0:
		ch.Detail = fmt.Sprintf("%d items (%d chunks) have no vectors: they get them once an embedding model is configured (or from capsuled reindex)", st.ItemsWithout, st.ChunksWithout)
	case !st.Semantic:
		ch.Detail = "no embedding model: keyword search only"
	case st.ItemsWithout > 0:
		ch.Detail = fmt.Sprintf("embedding %d items (%d chunks) without vectors in the background, with %s", st.ItemsWithout, st.ChunksWithout, st.Space)
	default:
		ch.Detail = fmt.Sprintf("every searchable item has vectors of %s", st.Space)
	}
	return ch
}

// engineStatus lists the engines behind svc-1 and memory chat; an upstream
// one is probed with GET {url}/models (OpenAI-compatible servers list their
// models there), within two seconds.
func (a *App) engineStatus(ctx context.Context) []dashboard.Engine {
	svc1 := dashboard.Engine{Name: "svc-1", Kind: "builtin", OK: true, Detail: "built-in retrieval policy"}
	if a.cfg.Chat.Engine == "upstream" {
		svc1 = probeUpstream(ctx, "svc-1", a.cfg.Chat.UpstreamURL, a.cfg.Chat.UpstreamKey)
	}
	mem := dashboard.Engine{Name: "memory chat", Kind: "builtin", OK: true, Detail: "built-in extractive model (memory-extractive)"}
	if a.cfg.Memory.UpstreamURL != "" {
		mem = probeUpstream(ctx, "memory chat", a.cfg.Memory.UpstreamURL, a.cfg.Memory.UpstreamKey)
	}
	return []dashboard.Engine{svc1, mem}
}

func probeUpstream(ctx context.Context, name, url, key string) dashboard.Engine {
	e := dashboard.Engine{Name: name, Kind: "upstream", URL: url}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/")+"/models", nil)
	if err != nil {
		e.Detail = err.Error()
		return e
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.Detail = err.Error()
		return e
	}
	resp.Body.Close()
	e.OK = resp.StatusCode == http.StatusOK
	e.Detail = "GET /models: " + resp.Status
	return e
}

// bufferWriter is an in-process http.ResponseWriter.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header         { return w.header }
func (w *bufferWriter) WriteHeader(code int)        { w.status = code }
func (w *bufferWriter) Write(b []byte) (int, error) { return w.body.Write(b) }

// metricFigures reads the API's Prometheus metrics and picks the key figures.
func metricFigures(ctx context.Context, h http.Handler) []dashboard.Figure {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil
	}
	req.RemoteAddr = "127.0.0.1:0"
	w := &bufferWriter{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		return nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&w.body)
	if err != nil {
		return nil
	}
	var total, errs, latencySum, latencyCount float64
	if f := fams["capsuled_http_requests_total"]; f != nil {
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue()
			if label(m, "route") == "getMetrics" {
				continue
			}
			total += v
			if strings.HasPrefix(label(m, "status"), "5") {
				errs += v
			}
		}
	}
	if f := fams["capsuled_http_request_duration_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			if label(m, "route") == "getMetrics" {
				continue
			}
			latencySum += m.GetHistogram().GetSampleSum()
			latencyCount += float64(m.GetHistogram().GetSampleCount())
		}
	}
	figs := []dashboard.Figure{
		{Label: "API requests", Value: fmt.Sprintf("%.0f", total)},
		{Label: "5xx responses", Value: fmt.Sprintf("%.0f", errs)},
	}
	if latencyCount > 0 {
		figs = append(figs, dashboard.Figure{Label: "Mean API latency", Value: fmt.Sprintf("%.1f ms", latencySum/latencyCount*1000)})
	}
	if f := fams["process_resident_memory_bytes"]; f != nil && len(f.GetMetric()) > 0 {
		figs = append(figs, dashboard.Figure{Label: "Resident memory", Value: fmt.Sprintf("%.0f MiB", math.Round(f.GetMetric()[0].GetGauge().GetValue()/(1<<20)))})
	}
	if f := fams["go_goroutines"]; f != nil && len(f.GetMetric()) > 0 {
		figs = append(figs, dashboard.Figure{Label: "Goroutines", Value: fmt.Sprintf("%.0f", f.GetMetric()[0].GetGauge().GetValue())})
	}
	return figs
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

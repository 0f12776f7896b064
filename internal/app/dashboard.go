package app

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"capsuled/internal/dashboard"
)

// mountDashboard serves the dashboard at /dashboard in front of the API
// handler, which gets every other path.
func (a *App) mountDashboard(apiHandler http.Handler) (http.Handler, error) {
	d, err := dashboard.New(dashboard.Config{
		MaxUploadBytes: a.cfg.MaxUploadBytes,
		Version:        a.cfg.Version,
		Now:            a.cfg.Now,
	}, dashboard.Deps{
		Auth:     a.auth,
		Secrets:  a.db.Keys(),
		Capsules: a.dashboardCapsules(),
		Memory:   a.dashboardMemory(),
		Status:   a.dashboardStatus(apiHandler),
	}, a.log)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.Prefix, d)
	mux.Handle(dashboard.Prefix+"/", d)
	mux.Handle("/", apiHandler)
	return mux, nil
}

// dashboardCapsules is the capsule service as the dashboard uses it (nil:
// its pages say capsules are not available).
func (a *App) dashboardCapsules() dashboard.Capsules { return nil }

// dashboardMemory is the memory service as the dashboard uses it (nil: its
// pages say memory is not available).
func (a *App) dashboardMemory() dashboard.Memory { return nil }

// dashboardServices adds the embedder, semantic search and upstream engines
// to the status.
func (a *App) dashboardServices(ctx context.Context, st *dashboard.Status) {}

// dashboardStatus reports the server's status from the store check and the
// API's own /metrics, read in-process.
func (a *App) dashboardStatus(apiHandler http.Handler) dashboard.StatusFunc {
	return func(ctx context.Context) dashboard.Status {
		st := dashboard.Status{
			Version: a.cfg.Version,
			Store:   "sqlite (" + a.cfg.DatabasePath() + ")",
		}
		a.dashboardServices(ctx, &st)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		check := dashboard.Check{Name: "store", OK: true}
		if err := a.db.Ping(cctx); err != nil {
			check.OK, check.Detail = false, err.Error()
		}
		st.Checks = append([]dashboard.Check{check}, st.Checks...)
		st.Figures = append(st.Figures, metricFigures(ctx, apiHandler)...)
		return st
	}
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

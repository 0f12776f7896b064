package api

import (
	"bytes"
	"context"
	"time"

	"github.com/prometheus/common/expfmt"

	"capsuled/gen"
	"capsuled/internal/capsule"
)

// GetHealth answers the liveness probe.
func (s *Server) GetHealth(context.Context, gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	v := s.cfg.Version
	return gen.GetHealth200JSONResponse{Status: gen.HealthStatusOk, Version: &v}, nil
}

// GetReadiness runs every readiness check.
func (s *Server) GetReadiness(ctx context.Context, _ gen.GetReadinessRequestObject) (gen.GetReadinessResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	checks := map[string]struct {
		Detail *string `json:"detail,omitempty"`
		Ok     bool    `json:"ok"`
	}{}
	ready := true
	for name, check := range s.checks {
		c := checks[name]
		c.Ok = true
		if err := check(ctx); err != nil {
			ready = false
			c.Ok = false
			d := err.Error()
			c.Detail = &d
		}
		checks[name] = c
	}
	v := s.cfg.Version
	h := gen.Health{Status: gen.HealthStatusOk, Version: &v, Checks: &checks}
	if vs, ok := s.capsules.(vectorStatuser); ok && vs != nil && ready {
		if st, err := vs.VectorStatus(ctx); err == nil {
			h.Embedding = embeddingToWire(st)
		} else {
			s.log.WarnContext(ctx, "readiness: vector status", "err", err)
		}
	}
	if !ready {
		h.Status = gen.HealthStatusUnavailable
		return gen.GetReadiness503JSONResponse(h), nil
	}
	return gen.GetReadiness200JSONResponse(h), nil
}

// vectorStatuser is a capsule service that reports where its vectors
// stand.
type vectorStatuser interface {
	VectorStatus(ctx context.Context) (capsule.VectorStatus, error)
}

func embeddingToWire(st capsule.VectorStatus) *gen.EmbeddingStatus {
	e := &gen.EmbeddingStatus{Semantic: st.Semantic, ItemsWithoutVectors: st.ItemsWithout, ChunksWithoutVectors: st.ChunksWithout}
	if st.Semantic {
		e.Model, e.Dimensions = &st.Space.Model, &st.Space.Dimensions
	}
	if st.Stored.Model != "" {
		e.StoredModel = &st.Stored.Model
	}
	return e
}

// GetMetrics renders the Prometheus metrics.
func (s *Server) GetMetrics(context.Context, gen.GetMetricsRequestObject) (gen.GetMetricsResponseObject, error) {
	families, err := s.metrics.registry.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
	}
	return gen.GetMetrics200TextResponse(buf.String()), nil
}

// ListModels lists svc-1 and the models the memory operation accepts.
func (s *Server) ListModels(context.Context, gen.ListModelsRequestObject) (gen.ListModelsResponseObject, error) {
	out := gen.ListModels200JSONResponse{Object: gen.List, Data: make([]gen.Model, 0, len(s.models))}
	for _, m := range s.models {
		gm := gen.Model{Id: m.ID, Object: gen.ModelObjectModel, Created: m.Created.Unix(), OwnedBy: m.OwnedBy}
		if m.Description != "" {
			gm.Description = &m.Description
		}
		out.Data = append(out.Data, gm)
	}
	return out, nil
}

// GetOpenAPISpec serves openapi.yaml as written.
func (s *Server) GetOpenAPISpec(context.Context, gen.GetOpenAPISpecRequestObject) (gen.GetOpenAPISpecResponseObject, error) {
	return gen.GetOpenAPISpec200ApplicationyamlResponse{Body: bytes.NewReader(s.spec.YAML), ContentLength: int64(len(s.spec.YAML))}, nil
}

package api

import (
	"context"
	"strings"

	"capsuled/gen"
	"capsuled/internal/agent"
	"capsuled/internal/domain"
)

// AskCapsule runs svc-1's retrieval loop over a capsule on the server: the
// loop of internal/agent, with the chat service in process as the model
// and the capsule service as the backend.
func (s *Server) AskCapsule(ctx context.Context, req gen.AskCapsuleRequestObject) (gen.AskCapsuleResponseObject, error) {
	if s.capsules == nil || s.chat == nil {
		return nil, notImplemented("ask (it needs the capsule and the svc-1 services)")
	}
	if req.Body == nil {
		return nil, domain.Invalid("question", "a request body is required")
	}
	in, err := askFromWire(*req.Body)
	if err != nil {
		return nil, err
	}
	engine := "builtin"
	if e, ok := s.chat.(interface{ Engine() string }); ok {
		engine = e.Engine()
	}
	if in.engine != "" && in.engine != engine {
		return nil, &domain.Error{Kind: domain.KindUnprocessable, Code: "engine_unavailable", Param: "engine",
			Message: "this server runs the " + engine + " engine for svc-1, not " + in.engine}
	}
	if _, err := s.capsules.GetCapsule(ctx, req.Capsule); err != nil {
		return nil, err
	}
	backend := agent.NewCapsuleBackend(s.capsules, req.Capsule)
	res, err := agent.Run(ctx, agent.InProcess(chargedChat{s}), backend, in.question, agent.Config{MaxTurns: in.maxTurns, Limit: in.limit})
	if err != nil {
		return nil, err
	}
	out := gen.AskResult{Question: in.question, Engine: engine, Reported: res.Reported, Turns: res.Turns, ToolCalls: res.ToolCalls,
		Items: gen.QueryResults{}, Trace: traceToWire(res.Trace)}
	seen := map[string]bool{}
	var hits []domain.Hit
	for _, id := range res.IDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		h, ok, err := backend.Evidence(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			hits = append(hits, h)
		}
	}
	out.Items = hitsToWire(hits)
	return gen.AskCapsule200JSONResponse(out), nil
}

// askRequest is an ask request, checked.
type askRequest struct {
	question, engine string
	maxTurns, limit  int
}

func askFromWire(b gen.AskRequest) (askRequest, error) {
	r := askRequest{question: b.Question, maxTurns: 8, limit: domain.DefaultQueryLimit}
	if strings.TrimSpace(b.Question) == "" {
		return r, domain.Invalid("question", "question must not be only whitespace")
	}
	if b.Engine != nil {
		r.engine = string(*b.Engine)
	}
	if b.MaxTurns != nil {
		r.maxTurns = *b.MaxTurns
	}
	if b.Limit != nil {
		r.limit = *b.Limit
	}
	return r, nil
}

func traceToWire(steps []agent.Step) []gen.AskTurn {
	out := make([]gen.AskTurn, 0, len(steps))
	for _, st := range steps {
		t := gen.AskTurn{Turn: st.Turn, Content: st.Content, FinishReason: st.Finish, ToolCalls: []gen.AskToolCall{},
			DurationMs: float32(st.Duration.Seconds() * 1000), EngineMs: float32(st.Model.Seconds() * 1000)}
		for _, tc := range st.ToolCalls {
			w := gen.AskToolCall{Name: tc.Name, Arguments: tc.Arguments, ResultCount: len(tc.ResultIDs), ResultBytes: tc.ResultBytes, ResultIds: tc.ResultIDs}
			if w.ResultIds == nil {
				w.ResultIds = []string{}
			}
			if tc.Error != "" {
				w.Error = &tc.Error
			}
			t.ToolCalls = append(t.ToolCalls, w)
		}
		out = append(out, t)
	}
	return out
}

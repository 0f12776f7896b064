package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"capsuled/gen"
	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

// Memory is what the HTTP layer needs from the memory service. Nil answers 501.
type Memory interface {
	// Models are the model ids the memory operation accepts.
	Models() []string
	Chat(ctx context.Context, in memory.ChatInput) (memory.ChatResult, error)
	// NewTurns are the request's messages whose turns the namespace does
	// not hold yet (those Chat would embed).
	NewTurns(ctx context.Context, ns, conversationID string, msgs []domain.Message) ([]domain.Message, error)

	Namespaces(ctx context.Context, allowed func(string) bool) ([]domain.NamespaceStats, error)
	Namespace(ctx context.Context, ns string) (domain.NamespaceStats, error)
	DeleteNamespace(ctx context.Context, ns string) (int, error)
	List(ctx context.Context, ns string, o memory.ListOptions) ([]memory.Found, string, error)
	Add(ctx context.Context, ns string, in memory.NewMemory) (domain.Memory, error)
	Get(ctx context.Context, ns, id string) (domain.Memory, error)
	Update(ctx context.Context, ns, id string, p memory.Patch) (domain.Memory, error)
	Delete(ctx context.Context, ns, id string) error
	SetExpiry(ctx context.Context, ns, id string, at *time.Time) (domain.Memory, error)
	Export(ctx context.Context, ns string, fn func(domain.Memory) error) error
	Import(ctx context.Context, ns string, mems []domain.Memory) (imported, skipped int, err error)
	Failures(ctx context.Context, ns string) ([]domain.MemoryFailure, error)
}

// CreateMemoryChatCompletion runs one memory chat turn. Its body is the value
// the gate's validation decoded (decodedOnce), not in.Body.
func (s *Server) CreateMemoryChatCompletion(ctx context.Context, in gen.CreateMemoryChatCompletionRequestObject) (gen.CreateMemoryChatCompletionResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory chat")
	}
	req, err := ChatRequestFromWire(info(ctx).Value)
	if err != nil {
		return nil, err
	}
	if err := s.checkChatTokens(req, s.cfg.MaxRequestTokens); err != nil {
		return nil, err
	}
	ns := domain.GlobalNamespace
	if in.Params.Namespace != nil {
		ns = *in.Params.Namespace
	}
	if err := domain.ValidateNamespace(ns); err != nil {
		return nil, err
	}
	if models := s.memory.Models(); !slices.Contains(models, req.Model) {
		return nil, &domain.Error{Kind: domain.KindNotFound, Code: "model_not_found", Param: "model",
			Message: "model " + quote(req.Model) + " is not served by the memory operation; use one of: " + strings.Join(models, ", ")}
	}
	if req.N > 1 {
		return nil, domain.Invalid("n", "the memory operation generates one choice (n must be 1)")
	}
	mi := memory.ChatInput{Namespace: ns, Request: *req}
	if err := memoryOptionsFromWire(info(ctx).Value, &mi); err != nil {
		return nil, err
	}
	turns, err := s.memory.NewTurns(ctx, ns, mi.ConversationID, req.Messages)
	if err != nil {
		return nil, err
	}
	if err := s.checkNewTurnTokens(turns); err != nil {
		return nil, err
	}
	if req.Stream {
		// The turn is selected, generated and persisted exactly as without
		// streaming; the memory report rides on the last chunk.
		ms := &memoryStream{chatStream: &chatStream{
			log:  s.log,
			req:  req,
			head: &domain.Completion{ID: "chatcmpl-" + newStreamID(), Model: req.Model, Created: time.Now(), SystemFingerprint: knownFingerprint(s.memory, req.Model)},
			ctx:  ctx,
		}}
		ms.run = func() (*domain.Completion, error) {
			res, err := s.memoryChat(ctx, mi)
			if err != nil {
				return nil, err
			}
			ms.report = memoryReport(res)
			return &res.Completion, nil
		}
		return ms, nil
	}
	res, err := s.memoryChat(ctx, mi)
	if err != nil {
		return nil, err
	}
	out := CompletionToWire(&res.Completion)
	out.Memory = memoryReport(res)
	return gen.CreateMemoryChatCompletion200JSONResponse(out), nil
}

// memoryChat runs one memory turn and charges the tokens it spent on the
// model server: the reply's prompt and completion tokens and those of the
// fact extraction, also when the turn failed after the reply was generated.
func (s *Server) memoryChat(ctx context.Context, in memory.ChatInput) (memory.ChatResult, error) {
	res, err := s.memory.Chat(ctx, in)
	s.chargeTokens(ctx, res.Completion.Usage.Total()+res.ExtractionUsage.Total())
	return res, err
}

// memoryOptionsFromWire reads the request's memory extension (MemoryOptions)
// from the body the validation decoded.
func memoryOptionsFromWire(body any, mi *memory.ChatInput) error {
	fields, _ := body.(map[string]any)
	o, _ := fields["memory"].(map[string]any)
	if o == nil {
		return nil
	}
	f := wireFields(o)
	budget, err := f.int("budget_tokens")
	if err != nil {
		return domain.Invalid("memory.budget_tokens", "must be an integer")
	}
	if budget != nil {
		mi.BudgetTokens = *budget
		if mi.BudgetTokens == 0 {
			mi.BudgetTokens = -1 // an explicit 0: inject nothing
		}
	}
	if mi.ConversationID, err = f.str("conversation_id"); err != nil {
		return domain.Invalid("memory.conversation_id", "must be a string")
	}
	return nil
}

// memoryReport is the wire form of what a memory turn read and wrote.
func memoryReport(res memory.ChatResult) *gen.MemoryReport {
	ext := gen.MemoryReportExtraction(res.Extraction)
	r := &gen.MemoryReport{Namespace: res.Namespace, Read: orEmptyIDs(res.Read), Written: orEmptyIDs(res.Written), Extraction: &ext}
	if len(res.Superseded) > 0 {
		r.Superseded = &res.Superseded
	}
	return r
}

// memoryStream is the chat stream of the memory operation: the chunks of
// chatStream, with the memory report on the last chunk (the usage chunk
// when the client asked for usage, else the finish chunk).
type memoryStream struct {
	*chatStream
	report *gen.MemoryReport // set by run
}

func (m *memoryStream) VisitCreateMemoryChatCompletionResponse(w http.ResponseWriter) error {
	m.last = func(c *gen.ChatCompletionChunk) { c.Memory = m.report }
	return m.write(w)
}

func orEmptyIDs(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

func quote(s string) string { return `"` + s + `"` }

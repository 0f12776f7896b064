package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"capsuled/gen"
	"capsuled/internal/domain"
	"capsuled/internal/memory"
)

func init() {
	// Import bodies and export responses are JSON lines; kin-openapi
	// validates them as the array of their lines.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", decodeJSONLinesBody)
}

// decodeJSONLinesBody decodes a JSON-lines body as the array of its lines.
func decodeJSONLinesBody(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxMemoryLine)
	out := []any{}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// ListMemoryNamespaces lists the namespaces the caller may use.
func (s *Server) ListMemoryNamespaces(ctx context.Context, _ gen.ListMemoryNamespacesRequestObject) (gen.ListMemoryNamespacesResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	var allowed func(string) bool
	if p := principal(ctx); p != nil {
		allowed = p.CanNamespace
	}
	nss, err := s.memory.Namespaces(ctx, allowed)
	if err != nil {
		return nil, err
	}
	out := gen.NamespaceList{Data: make([]gen.NamespaceInfo, 0, len(nss))}
	for _, ns := range nss {
		out.Data = append(out.Data, namespaceToWire(ns))
	}
	return gen.ListMemoryNamespaces200JSONResponse(out), nil
}

// GetMemoryNamespace returns one namespace.
func (s *Server) GetMemoryNamespace(ctx context.Context, in gen.GetMemoryNamespaceRequestObject) (gen.GetMemoryNamespaceResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	ns, err := s.memory.Namespace(ctx, in.Namespace)
	if err != nil {
		return nil, err
	}
	return gen.GetMemoryNamespace200JSONResponse(namespaceToWire(ns)), nil
}

// DeleteMemoryNamespace deletes a namespace with everything in it.
func (s *Server) DeleteMemoryNamespace(ctx context.Context, in gen.DeleteMemoryNamespaceRequestObject) (gen.DeleteMemoryNamespaceResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	n, err := s.memory.DeleteNamespace(ctx, in.Namespace)
	if err != nil {
		return nil, err
	}
	return gen.DeleteMemoryNamespace200JSONResponse{Namespace: in.Namespace, Deleted: n}, nil
}

// ListMemories lists or searches the memories of a namespace.
func (s *Server) ListMemories(ctx context.Context, in gen.ListMemoriesRequestObject) (gen.ListMemoriesResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	p := in.Params
	o := memory.ListOptions{Query: deref(p.Q), Conversation: deref(p.ConversationId), Cursor: deref(p.Cursor),
		IncludeExpired: derefBool(p.IncludeExpired), IncludeSuperseded: derefBool(p.IncludeSuperseded)}
	if p.Kind != nil {
		o.Kind = domain.MemoryKind(*p.Kind)
	}
	if p.Limit != nil {
		o.Limit = *p.Limit
	}
	found, next, err := s.memory.List(ctx, in.Namespace, o)
	if err != nil {
		return nil, err
	}
	out := gen.MemoryList{Data: make([]gen.Memory, 0, len(found))}
	for _, f := range found {
		w := memoryToWire(f.Memory)
		if f.Score != nil {
			sc := float32(*f.Score)
			w.Score = &sc
		}
		out.Data = append(out.Data, w)
	}
	if next != "" {
		out.Next = &next
	}
	return gen.ListMemories200JSONResponse(out), nil
}

// CreateMemory writes a memory directly.
func (s *Server) CreateMemory(ctx context.Context, in gen.CreateMemoryRequestObject) (gen.CreateMemoryResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	b := in.Body
	nm := memory.NewMemory{Content: b.Content, Role: deref(b.Role), Conversation: deref(b.ConversationId), ValidFrom: b.ValidFrom, ExpiresAt: b.ExpiresAt}
	if b.Kind != nil {
		nm.Kind = domain.MemoryKind(*b.Kind)
	}
	if b.Metadata != nil {
		nm.Metadata = *b.Metadata
	}
	m, err := s.memory.Add(ctx, in.Namespace, nm)
	if err != nil {
		return nil, err
	}
	return gen.CreateMemory201JSONResponse(memoryToWire(m)), nil
}

// GetMemory returns one memory.
func (s *Server) GetMemory(ctx context.Context, in gen.GetMemoryRequestObject) (gen.GetMemoryResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	m, err := s.memory.Get(ctx, in.Namespace, in.Memory)
	if err != nil {
		return nil, err
	}
	return gen.GetMemory200JSONResponse(memoryToWire(m)), nil
}

// UpdateMemory changes a memory.
func (s *Server) UpdateMemory(ctx context.Context, in gen.UpdateMemoryRequestObject) (gen.UpdateMemoryResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	p := memory.Patch{Content: in.Body.Content, ValidFrom: in.Body.ValidFrom}
	if in.Body.Metadata != nil {
		p.Metadata = *in.Body.Metadata
	}
	m, err := s.memory.Update(ctx, in.Namespace, in.Memory, p)
	if err != nil {
		return nil, err
	}
	return gen.UpdateMemory200JSONResponse(memoryToWire(m)), nil
}

// DeleteMemory deletes a memory.
func (s *Server) DeleteMemory(ctx context.Context, in gen.DeleteMemoryRequestObject) (gen.DeleteMemoryResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	if err := s.memory.Delete(ctx, in.Namespace, in.Memory); err != nil {
		return nil, err
	}
	return gen.DeleteMemory204Response{}, nil
}

// SetMemoryExpiry sets or clears a memory's expiry.
func (s *Server) SetMemoryExpiry(ctx context.Context, in gen.SetMemoryExpiryRequestObject) (gen.SetMemoryExpiryResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	at := in.Body.ExpiresAt
	if in.Body.TtlSeconds != nil {
		t := time.Now().Add(time.Duration(*in.Body.TtlSeconds) * time.Second)
		at = &t
	}
	m, err := s.memory.SetExpiry(ctx, in.Namespace, in.Memory, at)
	if err != nil {
		return nil, err
	}
	return gen.SetMemoryExpiry200JSONResponse(memoryToWire(m)), nil
}

// ExportMemoryNamespace writes a namespace as JSON lines.
func (s *Server) ExportMemoryNamespace(ctx context.Context, in gen.ExportMemoryNamespaceRequestObject) (gen.ExportMemoryNamespaceResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	if err := domain.ValidateNamespace(in.Namespace); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := s.memory.Export(ctx, in.Namespace, func(m domain.Memory) error { return enc.Encode(memoryToWire(m)) }); err != nil {
		return nil, err
	}
	return gen.ExportMemoryNamespace200ApplicationxNdjsonResponse{Body: &buf, ContentLength: int64(buf.Len())}, nil
}

// ImportMemoryNamespace reads JSON lines into a namespace.
func (s *Server) ImportMemoryNamespace(ctx context.Context, in gen.ImportMemoryNamespaceRequestObject) (gen.ImportMemoryNamespaceResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	recs, err := ParseMemoryLines(in.Body)
	if err != nil {
		return nil, err
	}
	mems := make([]domain.Memory, len(recs))
	for i, r := range recs {
		mems[i] = memoryFromRecord(r)
	}
	imported, skipped, err := s.memory.Import(ctx, in.Namespace, mems)
	if err != nil {
		return nil, err
	}
	return gen.ImportMemoryNamespace200JSONResponse{Namespace: in.Namespace, Imported: imported, Skipped: skipped}, nil
}

// ListMemoryFailures lists recorded extraction failures.
func (s *Server) ListMemoryFailures(ctx context.Context, in gen.ListMemoryFailuresRequestObject) (gen.ListMemoryFailuresResponseObject, error) {
	if s.memory == nil {
		return nil, notImplemented("memory")
	}
	fs, err := s.memory.Failures(ctx, in.Namespace)
	if err != nil {
		return nil, err
	}
	out := gen.MemoryFailureList{Data: make([]gen.MemoryFailure, 0, len(fs))}
	for _, f := range fs {
		out.Data = append(out.Data, gen.MemoryFailure{Id: f.ID, Namespace: f.Namespace, Stage: gen.MemoryFailureStage(f.Stage), Error: f.Error,
			Attempts: f.Attempts, ConversationId: optString(f.Conversation), Input: f.Input, CreatedAt: f.CreatedAt})
	}
	return gen.ListMemoryFailures200JSONResponse(out), nil
}

// maxMemoryLine is the longest import line (a 32,000-byte content with its
// metadata fits many times over).
const maxMemoryLine = 1 << 20

// ParseMemoryLines reads JSON lines of memory records (blank lines are
// skipped). A bad line is a 400 naming its line number. Field-level rules
// are the spec's MemoryRecord schema, which the gate has already checked.
func ParseMemoryLines(r io.Reader) ([]gen.MemoryRecord, error) {
	if r == nil {
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "missing_body", Message: "a request body is required"}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMemoryLine)
	var out []gen.MemoryRecord
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec gen.MemoryRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&rec); err != nil || dec.More() {
			return nil, &domain.Error{Kind: domain.KindInvalid, Code: "invalid_json_line", Param: fmt.Sprintf("line %d", n),
				Message: fmt.Sprintf("line %d is not one JSON memory object", n)}
		}
		if rec.Content == "" {
			return nil, domain.Invalid(fmt.Sprintf("line %d: content", n), "content is required")
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &domain.Error{Kind: domain.KindTooLarge, Code: "line_too_large", Message: fmt.Sprintf("an import line is over %d bytes", maxMemoryLine)}
		}
		return nil, &domain.Error{Kind: domain.KindInvalid, Code: "unreadable_body", Message: "could not read the request body"}
	}
	return out, nil
}

func memoryFromRecord(r gen.MemoryRecord) domain.Memory {
	m := domain.Memory{ID: deref(r.Id), Role: deref(r.Role), Content: r.Content, Conversation: deref(r.ConversationId),
		SupersededBy: deref(r.SupersededBy), InvalidFrom: r.InvalidFrom, ExpiresAt: r.ExpiresAt}
	if r.Kind != nil {
		m.Kind = domain.MemoryKind(*r.Kind)
	}
	if r.Metadata != nil {
		m.Metadata = *r.Metadata
	}
	for _, p := range []struct {
		dst *time.Time
		src *time.Time
	}{{&m.CreatedAt, r.CreatedAt}, {&m.UpdatedAt, r.UpdatedAt}, {&m.ValidFrom, r.ValidFrom}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	return m
}

func memoryToWire(m domain.Memory) gen.Memory {
	meta := m.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	return gen.Memory{Id: m.ID, Namespace: m.Namespace, Kind: gen.MemoryKind(m.Kind), Role: optString(m.Role), Content: m.Content,
		ConversationId: optString(m.Conversation), Metadata: meta, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, ValidFrom: m.ValidFrom,
		InvalidFrom: m.InvalidFrom, SupersededBy: optString(m.SupersededBy), ExpiresAt: m.ExpiresAt}
}

func namespaceToWire(ns domain.NamespaceStats) gen.NamespaceInfo {
	return gen.NamespaceInfo{Name: ns.Name, MemoryCount: ns.MemoryCount, TurnCount: ns.Turns, FactCount: ns.Facts, NoteCount: ns.Notes,
		FailureCount: ns.Failures, CreatedAt: ns.CreatedAt, UpdatedAt: ns.UpdatedAt}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefBool(b *bool) bool { return b != nil && *b }

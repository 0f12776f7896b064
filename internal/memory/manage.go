package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// Namespaces lists the namespaces that allowed admits (nil admits all).
func (s *Service) Namespaces(ctx context.Context, allowed func(string) bool) ([]domain.NamespaceStats, error) {
	all, err := s.store.Namespaces(ctx, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, ns := range all {
		if allowed == nil || allowed(ns.Name) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// Namespace returns one namespace's counts.
func (s *Service) Namespace(ctx context.Context, ns string) (domain.NamespaceStats, error) {
	if err := checkNamespace(ns); err != nil {
		return domain.NamespaceStats{}, err
	}
	st, err := s.store.Namespace(ctx, ns, s.cfg.Now())
	return st, notFound(err, "namespace", ns)
}

// DeleteNamespace deletes a namespace with everything in it.
func (s *Service) DeleteNamespace(ctx context.Context, ns string) (int, error) {
	if err := checkNamespace(ns); err != nil {
		return 0, err
	}
	n, err := s.store.DeleteNamespace(ctx, ns)
	s.vectors.drop(ns)
	return n, notFound(err, "namespace", ns)
}

// ListOptions select memories to list or search.
type ListOptions struct {
	Query             string // search when set
	Kind              domain.MemoryKind
	Conversation      string
	Limit             int
	Cursor            string
	IncludeExpired    bool
	IncludeSuperseded bool
}

// A Found memory, with its score when it came from a search.
type Found struct {
	Memory domain.Memory
	Score  *float64
}

// List lists a namespace's memories, newest first, or searches them.
func (s *Service) List(ctx context.Context, ns string, o ListOptions) ([]Found, string, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, "", err
	}
	live := domain.LiveFilter{Now: s.cfg.Now(), IncludeExpired: o.IncludeExpired, IncludeSuperseded: o.IncludeSuperseded}
	if o.Limit <= 0 {
		o.Limit = 50
	}
	if o.Query == "" {
		mems, next, err := s.store.ListMemories(ctx, ns, domain.MemoryListFilter{LiveFilter: live, Kind: o.Kind, Conversation: o.Conversation, Limit: o.Limit, Cursor: o.Cursor})
		if err != nil {
			return nil, "", err
		}
		out := make([]Found, len(mems))
		for i, m := range mems {
			out[i] = Found{Memory: m}
		}
		return out, next, nil
	}
	if o.Cursor != "" {
		return nil, "", domain.Invalid("cursor", "a search (q) has no pages; leave out cursor")
	}
	sel, err := s.selectWith(ctx, Query{Namespace: ns, Text: o.Query, BudgetTokens: 1 << 30}, live)
	if err != nil {
		return nil, "", err
	}
	var out []Found
	for _, m := range sel.Ranked {
		if (o.Kind != "" && m.Memory.Kind != o.Kind) || (o.Conversation != "" && m.Memory.Conversation != o.Conversation) {
			continue
		}
		score := m.Score
		out = append(out, Found{Memory: m.Memory, Score: &score})
		if len(out) == o.Limit {
			break
		}
	}
	return out, "", nil
}

// NewMemory is a memory written directly.
type NewMemory struct {
	Content      string
	Kind         domain.MemoryKind // note (default) or fact
	Role         string
	Conversation string
	Metadata     map[string]any
	ValidFrom    *time.Time
	ExpiresAt    *time.Time
}

// Add stores a memory as given: no extraction, no deduplication.
func (s *Service) Add(ctx context.Context, ns string, in NewMemory) (domain.Memory, error) {
	if err := checkNamespace(ns); err != nil {
		return domain.Memory{}, err
	}
	if strings.TrimSpace(in.Content) == "" {
		return domain.Memory{}, domain.Invalid("content", "content may not be blank")
	}
	kind := in.Kind
	switch kind {
	case "":
		kind = domain.MemoryNote
	case domain.MemoryNote, domain.MemoryFact:
	default:
		return domain.Memory{}, domain.Invalid("kind", "kind must be note or fact")
	}
	now := s.cfg.Now()
	m := domain.Memory{ID: newID("mem_"), Namespace: ns, Kind: kind, Role: in.Role, Content: in.Content, Conversation: in.Conversation,
		Metadata: in.Metadata, CreatedAt: now, UpdatedAt: now, ValidFrom: now, ExpiresAt: in.ExpiresAt}
	if in.ValidFrom != nil {
		m.ValidFrom = *in.ValidFrom
	}
	rec := domain.MemoryRecord{Memory: m}
	if _, err := s.store.InsertMemories(ctx, []domain.MemoryRecord{rec}); err != nil {
		return domain.Memory{}, err
	}
	defer s.vectors.drop(ns)
	if err := s.embedRecords(ctx, []domain.MemoryRecord{rec}); err != nil {
		s.log.WarnContext(ctx, "memory: embedding a new memory failed", "namespace", ns, "err", err)
	}
	return s.Get(ctx, ns, m.ID)
}

// Get returns one memory.
func (s *Service) Get(ctx context.Context, ns, id string) (domain.Memory, error) {
	if err := checkNamespace(ns); err != nil {
		return domain.Memory{}, err
	}
	m, err := s.store.GetMemory(ctx, ns, id)
	return m, notFound(err, "memory", id)
}

// Patch changes a memory; nil fields stay.
type Patch struct {
	Content   *string
	Metadata  map[string]any
	ValidFrom *time.Time
}

// Update applies p to a memory and re-indexes it.
func (s *Service) Update(ctx context.Context, ns, id string, p Patch) (domain.Memory, error) {
	m, err := s.Get(ctx, ns, id)
	if err != nil {
		return domain.Memory{}, err
	}
	if m.InvalidFrom != nil {
		return domain.Memory{}, &domain.Error{Kind: domain.KindConflict, Code: "memory_superseded",
			Message: fmt.Sprintf("memory %q was superseded by %q; add a new memory instead", id, m.SupersededBy)}
	}
	if p.Content != nil {
		if strings.TrimSpace(*p.Content) == "" {
			return domain.Memory{}, domain.Invalid("content", "content may not be blank")
		}
		m.Content = *p.Content
	}
	if p.Metadata != nil {
		m.Metadata = p.Metadata
	}
	if p.ValidFrom != nil {
		m.ValidFrom = *p.ValidFrom
	}
	m.UpdatedAt = s.cfg.Now()
	rec := s.record(m)
	if err := s.store.UpdateMemory(ctx, rec); err != nil {
		return domain.Memory{}, notFound(err, "memory", id)
	}
	defer s.vectors.drop(ns)
	if err := s.embedRecords(ctx, []domain.MemoryRecord{rec}); err != nil {
		s.log.WarnContext(ctx, "memory: embedding an updated memory failed", "namespace", ns, "err", err)
	}
	return s.Get(ctx, ns, id)
}

// record rebuilds the stored form of m (its search text).
func (s *Service) record(m domain.Memory) domain.MemoryRecord {
	rec := domain.MemoryRecord{Memory: m, SearchText: m.Content}
	if name, _ := m.Metadata["name"].(string); name != "" && m.Kind == domain.MemoryTurn {
		rec.SearchText = name + ": " + m.Content
	}
	return rec
}

// Delete deletes one memory.
func (s *Service) Delete(ctx context.Context, ns, id string) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	defer s.vectors.drop(ns)
	return notFound(s.store.DeleteMemory(ctx, ns, id), "memory", id)
}

// SetExpiry sets (or, with nil, clears) a memory's expiry.
func (s *Service) SetExpiry(ctx context.Context, ns, id string, at *time.Time) (domain.Memory, error) {
	m, err := s.Get(ctx, ns, id)
	if err != nil {
		return domain.Memory{}, err
	}
	m.ExpiresAt = at
	m.UpdatedAt = s.cfg.Now()
	vecs, err := s.store.Vectors(ctx, ns, s.modelID(), domain.LiveFilter{Now: m.UpdatedAt, IncludeExpired: true, IncludeSuperseded: true})
	if err != nil {
		return domain.Memory{}, err
	}
	rec := s.record(m)
	for _, v := range vecs {
		if v.ID == id {
			rec.Vector, rec.VectorModel = v.Vec, s.modelID()
		}
	}
	if err := s.store.UpdateMemory(ctx, rec); err != nil {
		return domain.Memory{}, notFound(err, "memory", id)
	}
	s.vectors.drop(ns)
	return s.Get(ctx, ns, id)
}

func (s *Service) modelID() string {
	if s.emb == nil {
		return ""
	}
	return s.emb.ModelID()
}

// Export calls fn with every memory of the namespace, oldest first.
func (s *Service) Export(ctx context.Context, ns string, fn func(domain.Memory) error) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	return s.store.ExportNamespace(ctx, ns, fn)
}

// Import stores exported memories into ns in one transaction. Ids already
// in ns are skipped, ids of other namespaces get fresh ids, turns keep their
// conversation deduplication. It returns how many were imported and skipped.
func (s *Service) Import(ctx context.Context, ns string, mems []domain.Memory) (int, int, error) {
	if err := checkNamespace(ns); err != nil {
		return 0, 0, err
	}
	var ids []string
	for _, m := range mems {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	owners, err := s.store.Owners(ctx, ids)
	if err != nil {
		return 0, 0, err
	}
	now := s.cfg.Now()
	recs := make([]domain.MemoryRecord, 0, len(mems))
	for i, m := range mems {
		if strings.TrimSpace(m.Content) == "" {
			return 0, 0, domain.Invalid(fmt.Sprintf("line %d: content", i+1), "content may not be blank")
		}
		m.Namespace = ns
		if m.ID == "" || (owners[m.ID] != "" && owners[m.ID] != ns) {
			m.ID = newID("mem_")
		}
		if m.Kind == "" {
			m.Kind = domain.MemoryNote
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		if m.UpdatedAt.IsZero() {
			m.UpdatedAt = m.CreatedAt
		}
		if m.ValidFrom.IsZero() {
			m.ValidFrom = m.CreatedAt
		}
		rec := s.record(m)
		if m.Kind == domain.MemoryTurn && m.Conversation != "" {
			rec.DedupeKey = dedupeKey(m.Role, m.Content)
		}
		recs = append(recs, rec)
	}
	stored, err := s.store.InsertMemories(ctx, recs)
	defer s.vectors.drop(ns)
	if err != nil {
		if errors.Is(err, domain.ErrConflict) {
			return 0, 0, &domain.Error{Kind: domain.KindConflict, Code: "memory_id_conflict", Message: "an imported id was taken concurrently; retry the import", Err: err}
		}
		return 0, 0, err
	}
	var fresh []domain.MemoryRecord
	for i, st := range stored {
		if st.Created {
			fresh = append(fresh, recs[i])
		}
	}
	if err := s.embedRecords(ctx, fresh); err != nil {
		s.log.WarnContext(ctx, "memory: embedding imported memories failed", "namespace", ns, "err", err)
	}
	return len(fresh), len(mems) - len(fresh), nil
}

// Failures lists the namespace's recorded failures, newest first.
func (s *Service) Failures(ctx context.Context, ns string) ([]domain.MemoryFailure, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	return s.store.Failures(ctx, ns, 1000)
}

// Sweep deletes memories whose expiry has passed.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	defer s.vectors.dropAll()
	return s.store.DeleteExpired(ctx, s.cfg.Now())
}

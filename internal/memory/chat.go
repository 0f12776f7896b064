package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/think"
)

// A ChatInput is one memory chat request.
type ChatInput struct {
	Namespace string
	Request   domain.ChatRequest
	// BudgetTokens is the request's memory budget (0: the server's;
	// negative: inject nothing).
	BudgetTokens int
	// ConversationID groups turns for deduplication ("" derives one from
	// the first user message).
	ConversationID string
}

// A ChatResult is the reply and what the turn read and wrote.
type ChatResult struct {
	Completion domain.Completion
	Namespace  string
	Read       []string // memories injected into the prompt
	Written    []string // memories stored by this request (turns and facts)
	Superseded []string // earlier facts superseded by this request's facts
	Extraction string   // "none", "ok" or "failed"
	// ExtractionUsage is the tokens the fact extraction spent on the model
	// server (every attempt). The reply's usage does not include them;
	// the caller's rate limit is charged both.
	ExtractionUsage domain.Usage
}

// Chat runs one memory chat turn: select, prompt, generate, persist, learn.
// When it fails after the reply was generated, the result still carries the
// completion (its usage: tokens spent) and the extraction's usage.
func (s *Service) Chat(ctx context.Context, in ChatInput) (ChatResult, error) {
	ns, conv, err := scope(in.Namespace, in.ConversationID, in.Request.Messages)
	if err != nil {
		return ChatResult{}, err
	}
	model, gen, ok := s.generator(in.Request.Model)
	if !ok {
		return ChatResult{}, &domain.Error{Kind: domain.KindNotFound, Code: "model_not_found", Param: "model",
			Message: fmt.Sprintf("model %q is not served by the memory operation; use one of: %s", in.Request.Model, strings.Join(s.Models(), ", "))}
	}
	budget := in.BudgetTokens
	if budget > s.cfg.MaxBudgetTokens {
		return ChatResult{}, domain.Invalid("memory.budget_tokens", "budget_tokens may not exceed %d", s.cfg.MaxBudgetTokens)
	}
	msgs := in.Request.Messages
	last, history := latestUser(msgs)
	present := map[string]bool{}
	for _, m := range msgs {
		if isTurnRole(m.Role) {
			present[dedupeKey(m.Role, m.Text())] = true
		}
	}
	sel, err := s.Select(ctx, Query{
		Namespace: ns, Text: last, Context: history, BudgetTokens: budget,
		// The turns the caller sends are already in its prompt.
		ExcludeTurn: func(m domain.Memory) bool {
			return m.Kind == domain.MemoryTurn && m.Conversation == conv && present[dedupeKey(m.Role, m.Content)]
		},
	})
	if err != nil {
		return ChatResult{}, err
	}
	prompt := withMemoryBlock(msgs, ns, sel.Packed)
	comp, err := gen.Generate(ctx, GenerateInput{Model: model, Messages: prompt, Memories: sel.Packed, Request: in.Request, Tokens: s.tok, Embedder: s.emb})
	if err != nil {
		return ChatResult{}, err
	}
	if comp.Model == "" {
		comp.Model = model
	}
	if comp.ID == "" {
		comp.ID = newID("chatcmpl-")
	}
	if comp.Created.IsZero() {
		comp.Created = s.cfg.Now()
	}
	reply := ""
	if len(comp.Choices) > 0 {
		reply = comp.Choices[0].Content
	}
	res := ChatResult{Completion: comp, Namespace: ns, Extraction: "none"}
	for _, m := range sel.Packed {
		res.Read = append(res.Read, m.Memory.ID)
	}
	turns := append([]domain.Message(nil), msgs...)
	if reply != "" {
		turns = append(turns, domain.TextMessage(domain.RoleAssistant, think.Strip(reply)))
	}
	stored, created, err := s.Persist(ctx, PersistInput{Namespace: ns, Conversation: conv, Messages: turns})
	if err != nil {
		return ChatResult{Completion: comp, Namespace: ns}, err
	}
	res.Written = created
	if s.extractor != nil && len(created) > 0 {
		facts, superseded, usage, err := s.learn(ctx, ns, conv, stored, created)
		res.ExtractionUsage = usage
		res.Written = append(res.Written, facts...)
		res.Superseded = superseded
		res.Extraction = "ok"
		if err != nil {
			res.Extraction = "failed"
		}
	}
	return res, nil
}

// PersistInput is a batch of turns to remember.
type PersistInput struct {
	Namespace    string
	Conversation string
	Messages     []domain.Message
	// At is when the turns were said (default now). Turns of one batch are
	// one millisecond apart, in order.
	At time.Time
}

// Persist stores the user and assistant turns of in (other roles and empty
// texts are skipped), deduplicated by content within the conversation, and
// embeds the new ones. It returns every turn's memory and the ids of those
// created now.
func (s *Service) Persist(ctx context.Context, in PersistInput) ([]domain.Memory, []string, error) {
	if err := checkNamespace(in.Namespace); err != nil {
		return nil, nil, err
	}
	at := in.At
	if at.IsZero() {
		at = s.cfg.Now()
	}
	recs, saids, _ := turnRecords(in, at, s.cfg.Now())
	if len(recs) == 0 {
		return nil, nil, nil
	}
	if !s.cfg.IndexAlone {
		// A turn is indexed together with the turns around it in its batch
		// (Config.IndexWindow each side for BM25, Config.EmbedWindow for
		// its vector): an answer is found by the words of its question, a
		// statement by the reply that explains it.
		contents := make([]string, len(recs))
		for i, r := range recs {
			contents[i] = r.Memory.Content
		}
		for i := range recs {
			recs[i].SearchText = windowText(saids, contents, i, s.cfg.IndexWindow, s.cfg.OwnRepeat)
			recs[i].EmbedText = windowText(saids, contents, i, s.cfg.EmbedWindow, s.cfg.EmbedOwnRepeat)
		}
	}
	stored, err := s.store.InsertMemories(ctx, recs)
	if err != nil {
		return nil, nil, err
	}
	defer s.vectors.drop(in.Namespace)
	var created []string
	var fresh []domain.MemoryRecord
	out := make([]domain.Memory, len(recs))
	for i, st := range stored {
		out[i] = recs[i].Memory
		out[i].ID = st.ID
		if st.Created {
			created = append(created, st.ID)
			fresh = append(fresh, recs[i])
		}
	}
	if err := s.embedRecords(ctx, fresh); err != nil {
		// The turns are stored; without vectors they are still found by
		// keyword. Say so in the log rather than fail the turn.
		s.log.WarnContext(ctx, "memory: embedding new turns failed", "namespace", in.Namespace, "err", err)
	}
	return out, created, nil
}

// turnRecords are the records Persist stores for in's messages: the user
// and assistant turns with text (an assistant's reasoning stripped,
// extractive replies left out), each with its dedupe key; saids are their
// texts with the speaker's name, src the index of each one's message.
func turnRecords(in PersistInput, at, now time.Time) (recs []domain.MemoryRecord, saids []string, src []int) {
	for i, m := range in.Messages {
		text := strings.TrimSpace(m.Text())
		if !isTurnRole(m.Role) || text == "" {
			continue
		}
		if m.Role == domain.RoleAssistant {
			text = strings.TrimSpace(think.Strip(text))
			if text == "" || IsExtractiveReply(text) {
				continue
			}
		}
		meta := map[string]any{}
		said := text
		if m.Name != "" {
			meta["name"] = m.Name
			said = m.Name + ": " + text
		}
		saids = append(saids, said)
		src = append(src, i)
		t := at.Add(time.Duration(len(recs)) * time.Millisecond)
		recs = append(recs, domain.MemoryRecord{
			Memory: domain.Memory{
				ID: newID("mem_"), Namespace: in.Namespace, Kind: domain.MemoryTurn, Role: m.Role, Content: text,
				Conversation: in.Conversation, Metadata: meta, CreatedAt: now, UpdatedAt: now, ValidFrom: t,
			},
			SearchText: said,
			DedupeKey:  dedupeKey(m.Role, text),
		})
	}
	return recs, saids, src
}

// scope is where a memory chat request's turns belong: its namespace (""
// is the global one), checked, and its conversation (derived from the
// messages when conversationID is "").
func scope(ns, conversationID string, msgs []domain.Message) (string, string, error) {
	if ns == "" {
		ns = domain.GlobalNamespace
	}
	if err := checkNamespace(ns); err != nil {
		return "", "", err
	}
	if conversationID == "" {
		conversationID = deriveConversation(msgs)
	}
	return ns, conversationID, nil
}

// NewTurns returns the messages of a memory chat request whose turns the
// namespace does not hold yet in the request's conversation (derived as Chat
// derives it when conversationID is ""): those Chat would store and embed.
// The HTTP layer bounds their tokens; turns already remembered cost nothing.
func (s *Service) NewTurns(ctx context.Context, ns, conversationID string, msgs []domain.Message) ([]domain.Message, error) {
	ns, conv, err := scope(ns, conversationID, msgs)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	recs, _, src := turnRecords(PersistInput{Namespace: ns, Conversation: conv, Messages: msgs}, now, now)
	if len(recs) == 0 {
		return nil, nil
	}
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.DedupeKey
	}
	stored, err := s.store.StoredTurnKeys(ctx, ns, conv, keys)
	if err != nil {
		return nil, fmt.Errorf("memory: stored turns: %w", err)
	}
	var out []domain.Message
	for i, k := range keys {
		if !stored[k] {
			stored[k] = true // a turn repeated in the request is stored once
			out = append(out, msgs[src[i]])
		}
	}
	return out, nil
}

// embedRecords computes and stores the vectors of recs.
func (s *Service) embedRecords(ctx context.Context, recs []domain.MemoryRecord) error {
	if s.emb == nil || len(recs) == 0 {
		return nil
	}
	texts := make([]string, len(recs))
	for i, r := range recs {
		texts[i] = r.EmbedText
		if texts[i] == "" {
			texts[i] = r.SearchText
		}
		if s.cfg.EmbedAlone && r.Memory.Kind == domain.MemoryTurn {
			texts[i] = r.Memory.Content
			if name, _ := r.Memory.Metadata["name"].(string); name != "" {
				texts[i] = name + ": " + texts[i]
			}
		}
		if texts[i] == "" {
			texts[i] = r.Memory.Content
		}
	}
	vecs, err := s.emb.Embed(ctx, texts)
	if err != nil {
		return err
	}
	for i := range recs {
		recs[i].Vector, recs[i].VectorModel = vecs[i], s.emb.ModelID()
		if err := s.store.UpdateMemory(ctx, recs[i]); err != nil {
			return err
		}
	}
	return nil
}

func isTurnRole(role string) bool { return role == domain.RoleUser || role == domain.RoleAssistant }

// dedupeKey identifies a turn's content within a conversation: its role and
// the hash of its text with whitespace and case folded.
func dedupeKey(role, text string) string {
	if role == domain.RoleAssistant {
		text = think.Strip(text)
	}
	sum := sha256.Sum256([]byte(strings.ToLower(oneLine(text))))
	return role + ":" + hex.EncodeToString(sum[:16])
}

// deriveConversation names the conversation after its first user message,
// which stays the same while a client resends its growing history.
func deriveConversation(msgs []domain.Message) string {
	for _, m := range msgs {
		if m.Role == domain.RoleUser {
			sum := sha256.Sum256([]byte(oneLine(m.Text())))
			return "cnv_" + hex.EncodeToString(sum[:12])
		}
	}
	return "cnv_none"
}

// latestUser returns the text of the last user message and the texts of
// the user and assistant turns before it.
func latestUser(msgs []domain.Message) (string, []string) {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == domain.RoleUser {
			last = i
			break
		}
	}
	if last < 0 {
		return "", nil
	}
	var hist []string
	for _, m := range msgs[:last] {
		if isTurnRole(m.Role) {
			t := strings.TrimSpace(m.Text())
			if m.Role == domain.RoleAssistant {
				t = think.Strip(t)
			}
			if t != "" {
				hist = append(hist, t)
			}
		}
	}
	return msgs[last].Text(), hist
}

// MemoryBlockStart and MemoryBlockEnd delimit the injected memory block.
const (
	MemoryBlockStart = "<memory>"
	MemoryBlockEnd   = "</memory>"
)

// withMemoryBlock returns msgs with one system message holding the memory
// block, after the caller's leading system and developer messages. Without
// memories it returns msgs unchanged.
func withMemoryBlock(msgs []domain.Message, ns string, mems []Selected) []domain.Message {
	if len(mems) == 0 {
		return msgs
	}
	block := MemoryBlock(ns, mems)
	at := 0
	for at < len(msgs) && (msgs[at].Role == domain.RoleSystem || msgs[at].Role == domain.RoleDeveloper) {
		at++
	}
	out := make([]domain.Message, 0, len(msgs)+1)
	out = append(out, msgs[:at]...)
	out = append(out, domain.TextMessage(domain.RoleSystem, block))
	return append(out, msgs[at:]...)
}

// MemoryBlock renders the memory block: a header, then one line a memory,
// oldest first, each with its date.
func MemoryBlock(ns string, mems []Selected) string {
	sorted := append([]Selected(nil), mems...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].Memory.ValidFrom.Before(sorted[j-1].Memory.ValidFrom); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	var b strings.Builder
	b.WriteString(MemoryBlockStart + "\n")
	fmt.Fprintf(&b, "Memories from earlier conversations in namespace %q, oldest first, each with the date it was said or learned. Use them when they help; newer ones win over older ones.\n", ns)
	for _, m := range sorted {
		b.WriteString(memoryLine(m.Memory))
		b.WriteByte('\n')
	}
	b.WriteString(MemoryBlockEnd)
	return b.String()
}

// windowText is the index text of turn i of a batch: what it said (with
// its speaker's name) own times, the w turns before it (with their
// speakers' names) and the w turns after it.
func windowText(saids, contents []string, i, w, own int) string {
	parts := make([]string, 0, own+2*w)
	for range own {
		parts = append(parts, saids[i])
	}
	for j := max(0, i-w); j < i; j++ {
		parts = append(parts, saids[j])
	}
	for j := i + 1; j <= min(len(saids)-1, i+w); j++ {
		parts = append(parts, contents[j])
	}
	return strings.Join(parts, "\n")
}

package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// An Extractor finds durable facts in new turns. It returns the tokens it
// spent on a model server even when it fails (an answer that is not valid
// facts was paid for all the same): memory chat charges them to the
// caller's tokens-per-minute budget with the reply's.
type Extractor interface {
	Extract(ctx context.Context, in ExtractInput) ([]Fact, domain.Usage, error)
}

// ExtractInput is what an extractor reads.
type ExtractInput struct {
	Turns []domain.Memory // the new turns
	Known []domain.Memory // live facts of the namespace that a new fact may supersede
}

// A Fact is one extracted durable fact.
type Fact struct {
	Content    string   `json:"fact"`
	Supersedes []string `json:"supersedes"`
}

// ParseFacts reads an extractor's JSON answer: {"facts": [{"fact": "…",
// "supersedes": ["mem_…"]}]}, optionally inside a ```json fence. Facts with
// empty text are dropped; anything else malformed is an error.
func ParseFacts(text string) ([]Fact, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(t, "```json")
		t = strings.TrimPrefix(t, "```")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	var out struct {
		Facts *[]Fact `json:"facts"`
	}
	dec := json.NewDecoder(strings.NewReader(t))
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("extraction answer is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("extraction answer has text after its JSON object")
	}
	if out.Facts == nil {
		return nil, errors.New(`extraction answer has no "facts" array`)
	}
	var facts []Fact
	for _, f := range *out.Facts {
		f.Content = oneLine(f.Content)
		if f.Content == "" {
			continue
		}
		if len(f.Content) > 2000 {
			return nil, errors.New("extracted fact over 2000 bytes")
		}
		facts = append(facts, f)
	}
	return facts, nil
}

// learn extracts facts from the new turns, stores them and supersedes the
// facts they contradict. Extraction is tried Config.ExtractAttempts times;
// when every attempt fails the failure is recorded and returned. The usage
// is the tokens of every attempt, failed or not.
func (s *Service) learn(ctx context.Context, ns, conv string, turns []domain.Memory, created []string) (written, superseded []string, usage domain.Usage, err error) {
	isNew := map[string]bool{}
	for _, id := range created {
		isNew[id] = true
	}
	var fresh []domain.Memory
	for _, t := range turns {
		if isNew[t.ID] {
			fresh = append(fresh, t)
		}
	}
	known, err := s.store.Recent(ctx, ns, domain.MemoryFact, 50, s.live())
	if err != nil {
		return nil, nil, usage, err
	}
	var facts []Fact
	var lastErr error
	attempts := 0
	for attempts < s.cfg.ExtractAttempts {
		attempts++
		actx, cancel := context.WithTimeout(ctx, s.cfg.ExtractTimeout)
		var used domain.Usage
		facts, used, lastErr = s.extractor.Extract(actx, ExtractInput{Turns: fresh, Known: known})
		cancel()
		usage.PromptTokens += used.PromptTokens
		usage.CompletionTokens += used.CompletionTokens
		if lastErr == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(time.Duration(attempts) * 50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if lastErr != nil {
		var input strings.Builder
		for _, t := range fresh {
			input.WriteString(t.Role + ": " + t.Content + "\n")
		}
		f := domain.MemoryFailure{ID: newID("mfl_"), Namespace: ns, Stage: "extraction", Error: lastErr.Error(), Attempts: attempts,
			Conversation: conv, Input: strings.TrimSpace(input.String()), CreatedAt: s.cfg.Now()}
		s.log.WarnContext(ctx, "memory: fact extraction failed", "namespace", ns, "attempts", attempts, "err", lastErr)
		if err := s.store.RecordFailure(context.WithoutCancel(ctx), f); err != nil {
			return nil, nil, usage, errors.Join(lastErr, err)
		}
		return nil, nil, usage, lastErr
	}
	knownIDs := map[string]bool{}
	for _, k := range known {
		knownIDs[k.ID] = true
	}
	now := s.cfg.Now()
	var recs []domain.MemoryRecord
	for _, f := range facts {
		recs = append(recs, domain.MemoryRecord{
			Memory: domain.Memory{ID: newID("mem_"), Namespace: ns, Kind: domain.MemoryFact, Content: f.Content,
				Metadata: map[string]any{"conversation_id": conv}, CreatedAt: now, UpdatedAt: now, ValidFrom: now},
			DedupeKey: dedupeKey("fact", f.Content),
		})
	}
	if len(recs) == 0 {
		return nil, nil, usage, nil
	}
	stored, err := s.store.InsertMemories(ctx, recs)
	if err != nil {
		return nil, nil, usage, err
	}
	defer s.vectors.drop(ns)
	var fresh2 []domain.MemoryRecord
	for i, st := range stored {
		if !st.Created {
			continue
		}
		written = append(written, st.ID)
		fresh2 = append(fresh2, recs[i])
		for _, old := range facts[i].Supersedes {
			if !knownIDs[old] || old == st.ID {
				continue // only live facts of this namespace can be superseded
			}
			if err := s.store.Supersede(ctx, ns, old, st.ID, now); err == nil {
				superseded = append(superseded, old)
				delete(knownIDs, old)
			} else if !errors.Is(err, domain.ErrNotFound) {
				return written, superseded, usage, err
			}
		}
	}
	if err := s.embedRecords(ctx, fresh2); err != nil {
		s.log.WarnContext(ctx, "memory: embedding facts failed", "namespace", ns, "err", err)
	}
	return written, superseded, usage, nil
}

// extractionPrompt is the instruction of the upstream extractor.
const extractionPrompt = `You maintain a long-term memory. Read the new conversation turns and list the durable facts they state about the user or their world: preferences, names, relationships, plans, decisions, dates, places. Skip small talk, questions and anything not stated. Write each fact as one short self-contained sentence with names instead of pronouns.
When a new fact contradicts or replaces one of the known facts, list that known fact's id in "supersedes".
Answer with one JSON object and nothing else: {"facts": [{"fact": "...", "supersedes": ["mem_..."]}]}. Answer {"facts": []} when there is nothing durable.`

// extractionMessages builds the extractor's prompt.
func extractionMessages(in ExtractInput) []domain.Message {
	var b strings.Builder
	b.WriteString("Known facts:\n")
	if len(in.Known) == 0 {
		b.WriteString("(none)\n")
	}
	for _, k := range in.Known {
		fmt.Fprintf(&b, "- %s [%s]: %s\n", k.ID, k.ValidFrom.UTC().Format(time.DateOnly), oneLine(k.Content))
	}
	b.WriteString("\nNew turns:\n")
	for _, t := range in.Turns {
		fmt.Fprintf(&b, "%s: %s\n", t.Role, oneLine(t.Content))
	}
	return []domain.Message{domain.TextMessage(domain.RoleSystem, extractionPrompt), domain.TextMessage(domain.RoleUser, b.String())}
}

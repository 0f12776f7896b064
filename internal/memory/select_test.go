package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/memory"
	"capsuled/internal/store/sqlite"
)

// session persists one batch of named turns (speaker A as user, B as
// assistant) and returns their ids in order.
func session(t *testing.T, b *bundle, ns string, turns ...string) []string {
	t.Helper()
	var msgs []domain.Message
	for i, tx := range turns {
		role, name := domain.RoleUser, "Ana"
		if i%2 == 1 {
			role, name = domain.RoleAssistant, "Ben"
		}
		m := domain.TextMessage(role, tx)
		m.Name = name
		msgs = append(msgs, m)
	}
	stored, _, err := b.svc.Persist(context.Background(), memory.PersistInput{Namespace: ns, Conversation: "c1", Messages: msgs, At: b.now})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(stored))
	for i, m := range stored {
		ids[i] = m.ID
	}
	return ids
}

// TestSelectionRanksTheTurnThatSaidIt checks that, with each turn indexed
// together with its neighbours, the turn whose own text answers the query
// ranks above the neighbours whose windows also hold it, for every fusion
// and with or without the embedder.
func TestSelectionRanksTheTurnThatSaidIt(t *testing.T) {
	t.Parallel()
	turns := []string{
		"How was the weekend?",
		"Busy, we went to the coast.",
		"I finally adopted a greyhound called Pepper from the shelter.",
		"That is lovely, dogs are great company.",
		"Work starts again on Monday.",
	}
	tests := []struct {
		name   string
		fusion memory.Fusion
		emb    memory.Embedder
	}{
		{"convex, hybrid", memory.FusionConvex, fakeEmbedder{}},
		{"rrf, hybrid", memory.FusionRRF, fakeEmbedder{}},
		{"core, hybrid", memory.FusionCore, fakeEmbedder{}},
		{"core, keyword only", memory.FusionCore, nil},
		{"default, keyword only", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memory.Deps{Embedder: tt.emb}, memory.Config{Fusion: tt.fusion})
			ids := session(t, b, "pets", turns...)
			sel, err := b.svc.Select(context.Background(), memory.Query{Namespace: "pets", Text: "What is the name of Ana's greyhound from the shelter?"})
			if err != nil {
				t.Fatal(err)
			}
			if len(sel.Ranked) < 3 {
				t.Fatalf("ranked %d memories, want the window of three", len(sel.Ranked))
			}
			if got := sel.Ranked[0].Memory.ID; got != ids[2] {
				t.Fatalf("first is %q, want the turn that said it (%q)", sel.Ranked[0].Memory.Content, turns[2])
			}
		})
	}
}

// TestNeighbourPenaltyMovesWindowsDown checks the optional diversity step:
// with the penalty on, a turn of an unrelated window that matches the query
// comes before the second turn of the best window.
func TestNeighbourPenaltyMovesWindowsDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		penalty float64
		// wantSecond: the second-ranked memory is the other session's turn.
		wantSecond bool
	}{
		{"off (default)", 0, false},
		{"full penalty", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memory.Deps{}, memory.Config{NeighbourPenalty: tt.penalty})
			session(t, b, "ns", "I bought a kayak.", "A red kayak?", "Yes, a red kayak for the lake.")
			b.now = b.now.Add(48 * time.Hour)
			other := session(t, b, "ns", "The weather was grey all week.", "We paddled the kayak anyway.", "Brave of you.")
			sel, err := b.svc.Select(context.Background(), memory.Query{Namespace: "ns", Text: "red kayak lake"})
			if err != nil {
				t.Fatal(err)
			}
			if len(sel.Ranked) < 2 {
				t.Fatalf("ranked %d", len(sel.Ranked))
			}
			second := sel.Ranked[1].Memory.ID
			if got := second == other[0] || second == other[1] || second == other[2]; got != tt.wantSecond {
				t.Fatalf("second is %q (other session: %v), want other session %v", sel.Ranked[1].Memory.Content, got, tt.wantSecond)
			}
		})
	}
}

func TestUnknownFusionIsRefused(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d := memory.Deps{Store: db.Memory(), Generators: []memory.Generator{memory.Extractive{}}}
	for _, f := range []memory.Fusion{"", memory.FusionRRF, memory.FusionConvex, memory.FusionCore} {
		if _, err := memory.New(memory.Config{Fusion: f}, d); err != nil {
			t.Fatalf("fusion %q: %v", f, err)
		}
	}
	if _, err := memory.New(memory.Config{Fusion: "borda"}, d); err == nil {
		t.Fatal("fusion borda: no error")
	}
}

// TestSpeakerBonus checks that a turn said by the person the query names
// ranks above an equally matching turn said by someone else.
func TestSpeakerBonus(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"Ana", "Ben"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memory.Deps{}, memory.Config{})
			said := map[string]string{}
			for i, name := range []string{"Ana", "Ben"} {
				m := domain.TextMessage(domain.RoleUser, "I bought a new bicycle today.")
				m.Name = name
				stored, _, err := b.svc.Persist(context.Background(), memory.PersistInput{Namespace: "ns", Conversation: name, Messages: []domain.Message{m}, At: b.now.Add(time.Duration(i) * time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				said[stored[0].ID] = name
			}
			sel, err := b.svc.Select(context.Background(), memory.Query{Namespace: "ns", Text: "What did " + who + " buy, a bicycle?"})
			if err != nil {
				t.Fatal(err)
			}
			if len(sel.Ranked) != 2 {
				t.Fatalf("ranked %d, want 2", len(sel.Ranked))
			}
			if got := said[sel.Ranked[0].Memory.ID]; got != who {
				t.Fatalf("first said by %s, want %s", got, who)
			}
		})
	}
}

// TestDateCue checks that a question naming a day or a month prefers the
// turn said then over an equally matching turn of another time, and that
// the cue is off by default.
func TestDateCue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		weight   float64
		question string
		want     int // index of the session whose turn ranks first; -1: either
	}{
		{"day", 1, "What did Ana bake on 3 March, 2023?", 0},
		{"other day", 1, "What did Ana bake on July 9, 2023?", 1},
		{"month", 1, "What did Ana bake in July 2023?", 1},
		{"no date", 1, "What did Ana bake?", -1},
		{"default weight", 0, "What did Ana bake on 3 March, 2023?", 0},
		{"off", -1, "What did Ana bake on 3 March, 2023?", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memory.Deps{Embedder: fakeEmbedder{}}, memory.Config{DateWeight: tt.weight, RecencyWeight: -1})
			var first []string
			for i, at := range []time.Time{time.Date(2023, 3, 3, 14, 0, 0, 0, time.UTC), time.Date(2023, 7, 9, 10, 0, 0, 0, time.UTC)} {
				m := domain.TextMessage(domain.RoleUser, "I baked a lemon cake for the neighbours.")
				m.Name = "Ana"
				stored, _, err := b.svc.Persist(context.Background(), memory.PersistInput{Namespace: "ns", Conversation: fmt.Sprint("s", i), Messages: []domain.Message{m}, At: at})
				if err != nil {
					t.Fatal(err)
				}
				first = append(first, stored[0].ID)
			}
			sel, err := b.svc.Select(context.Background(), memory.Query{Namespace: "ns", Text: tt.question})
			if err != nil {
				t.Fatal(err)
			}
			if len(sel.Ranked) != 2 {
				t.Fatalf("ranked %d, want 2", len(sel.Ranked))
			}
			if tt.want >= 0 && sel.Ranked[0].Memory.ID != first[tt.want] {
				t.Fatalf("first is the turn of %s, want session %d", sel.Ranked[0].Memory.ValidFrom, tt.want)
			}
			// Without a date neither turn gets the bonus (1/61 at weight 1):
			// the equal turns differ by the fusion's tie-break only.
			if gap := sel.Ranked[0].Score - sel.Ranked[1].Score; tt.want < 0 && gap > 0.5/61 {
				t.Fatalf("without a date the equal turns score %v and %v", sel.Ranked[0].Score, sel.Ranked[1].Score)
			}
		})
	}
}

// TestFeedbackLiftsTurnsLikeTheBestMatch checks the pseudo-relevance
// feedback: a turn that shares no word with the query but many with its best
// match ranks above an unrelated turn when feedback is on (the default), and
// the two tie on the dense part without it.
func TestFeedbackLiftsTurnsLikeTheBestMatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		weight float64
		lifted bool
	}{{"default", 0, true}, {"off", -1, false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memory.Deps{Embedder: fakeEmbedder{}}, memory.Config{FeedbackWeight: tt.weight, RecencyWeight: -1, IndexAlone: true})
			var ids []string
			for i, text := range []string{
				"lemon cake recipe with sugar butter flour eggs",
				"sugar butter flour eggs vanilla",
				"garden hose repair kit and tools",
			} {
				got := sessionIn(t, b, "ns", fmt.Sprint("c", i), text)
				ids = append(ids, got[0])
			}
			sel, err := b.svc.Select(context.Background(), memory.Query{Namespace: "ns", Text: "lemon cake recipe"})
			if err != nil {
				t.Fatal(err)
			}
			score := map[string]float64{}
			for _, m := range sel.Ranked {
				score[m.Memory.ID] = m.Score
			}
			if len(sel.Ranked) == 0 || sel.Ranked[0].Memory.ID != ids[0] {
				t.Fatalf("ranking %+v, want the recipe first", sel.Ranked)
			}
			if lifted := score[ids[1]] > score[ids[2]]+1e-9; lifted != tt.lifted {
				t.Fatalf("similar turn %v, unrelated %v: lifted %v, want %v", score[ids[1]], score[ids[2]], lifted, tt.lifted)
			}
		})
	}
}

// sessionIn persists named turns of Ana into a conversation.
func sessionIn(t *testing.T, b *bundle, ns, conv string, turns ...string) []string {
	t.Helper()
	var msgs []domain.Message
	for _, tx := range turns {
		m := domain.TextMessage(domain.RoleUser, tx)
		m.Name = "Ana"
		msgs = append(msgs, m)
	}
	stored, _, err := b.svc.Persist(context.Background(), memory.PersistInput{Namespace: ns, Conversation: conv, Messages: msgs, At: b.now})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(stored))
	for i, m := range stored {
		ids[i] = m.ID
	}
	return ids
}

// recordingEmbedder is fakeEmbedder that keeps the texts it was given.
type recordingEmbedder struct {
	fakeEmbedder
	mu    sync.Mutex
	texts []string
}

func (r *recordingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	r.texts = append(r.texts, texts...)
	r.mu.Unlock()
	return r.fakeEmbedder.Embed(ctx, texts)
}

// TestIndexAndEmbedWindows checks the two windows a turn is stored with:
// BM25 indexes it with IndexWindow turns on each side (default 2), while its
// vector is computed from EmbedWindow turns on each side (default 1).
func TestIndexAndEmbedWindows(t *testing.T) {
	t.Parallel()
	emb := &recordingEmbedder{}
	b := setup(t, memory.Deps{Embedder: emb}, memory.Config{})
	turns := []string{"alpha walrus", "bravo heron", "charlie otter", "delta lynx", "echo bison"}
	ids := session(t, b, "zoo", turns...)

	sel, err := b.svc.Select(context.Background(), memory.Query{Namespace: "zoo", Text: "walrus", Mode: memory.Keyword})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range sel.Ranked {
		got[s.Memory.ID] = true
	}
	for i, id := range ids {
		if want := i <= 2; got[id] != want {
			t.Errorf("keyword %q finds turn %d (%q): %v, want %v (two turns each side)", "walrus", i, turns[i], got[id], want)
		}
	}

	emb.mu.Lock()
	defer emb.mu.Unlock()
	var middle string
	for _, text := range emb.texts {
		if strings.Count(text, "charlie otter") == 2 {
			middle = text
		}
	}
	if middle == "" {
		t.Fatalf("no embedded text holds the middle turn twice: %q", emb.texts)
	}
	for _, w := range []string{"bravo", "delta"} {
		if !strings.Contains(middle, w) {
			t.Errorf("middle turn's vector text %q lacks its neighbour %q", middle, w)
		}
	}
	for _, w := range []string{"alpha", "echo"} {
		if strings.Contains(middle, w) {
			t.Errorf("middle turn's vector text %q holds %q, two turns away", middle, w)
		}
	}
}

package builtin

import (
	"slices"
	"strings"
	"testing"

	"capsuled/internal/toolresult"
)

func TestSubQuestions(t *testing.T) {
	t.Parallel()
	for q, want := range map[string][]string{
		// a comparison: one sub-question per clause
		"Does the Oslo memo say the boiler failed in March, while the Lyon memo blames the new pump for the leak?": {
			"Does the Oslo memo say the boiler failed in March",
			"the Lyon memo blames the new pump for the leak",
		},
		// a conjunction of names: one per name, the rest of the clause kept
		"Which supplier did both Acme Tools and Globex drop after the audit?": {
			"Which supplier did Acme Tools drop after the audit",
			"Which supplier did Globex drop after the audit",
		},
		"Which courier, used by the Oslo, Lyon and Turin offices, lost a parcel in May?": {
			"Which courier, used by the Oslo offices, lost a parcel in May",
			"Which courier, used by the Lyon offices, lost a parcel in May",
			"Which courier, used by the Turin offices, lost a parcel in May",
		},
		// clause and conjunction together
		"Was the printer fixed by Dana Reyes, and did Omar Haddad and Lena Park sign the repair log on Friday?": {
			"Was the printer fixed by Dana Reyes",
			"Omar Haddad sign the repair log on Friday",
			"Lena Park sign the repair log on Friday",
		},
		// a list of words is no clause; a single subject no conjunction
		"Who was accused of seeking wealth, power, and influence through fraud?": nil,
		"What nationality is the director of Ed Wood?":                           nil,
		"": nil,
	} {
		if got := subQuestions(q); !slices.Equal(got, want) {
			t.Errorf("subQuestions(%q)\n got  %q\n want %q", q, got, want)
		}
	}
}

// TestFirstTurnSearchesSubQuestions: the first turn searches each
// sub-question of a parallel question, in search mode, beside the question.
func TestFirstTurnSearchesSubQuestions(t *testing.T) {
	t.Parallel()
	c := gen(t, conv("Did the kitchen note mention the broken kettle, while the hallway note mentions the flickering lamp?"))
	var searched []string
	for _, tc := range c.ToolCalls {
		if tc.Name == ToolSearch {
			searched = append(searched, tc.Arguments)
		}
	}
	for _, want := range []string{"Did the kitchen note mention the broken kettle", "the hallway note mentions the flickering lamp"} {
		if !slices.ContainsFunc(searched, func(a string) bool { return strings.Contains(a, `"`+want+`"`) }) {
			t.Errorf("no search for the sub-question %q in %q", want, searched)
		}
	}
}

// TestKeepFirsts: whatever the hops heaped up, the best ReportLimit of the
// ranking hold the first AnchorKeep hits of the question's own search and
// the first hit of each sub-question's search.
func TestKeepFirsts(t *testing.T) {
	t.Parallel()
	q := "Did the kitchen note mention the kettle, while the hallway note mentions the lamp?"
	st := &state{question: q, docs: map[string]*doc{}}
	st.subs, st.clauses = subQuestions(q), len(splitClauses(q))
	if len(st.subs) != 2 {
		t.Fatalf("sub-questions %q", st.subs)
	}
	hits := func(ids ...string) []toolresult.Hit {
		var out []toolresult.Hit
		for _, id := range ids {
			out = append(out, toolresult.Hit{ID: id})
		}
		return out
	}
	st.lists = []resultList{
		{tool: ToolSearch, query: q, hits: hits("q1", "q2", "q3", "q4", "q5", "q6")},
		{tool: ToolSearch, query: st.subs[0], hits: hits("k1", "k2")},
		{tool: ToolSearch, query: st.subs[1], hits: hits("h1", "h2")},
	}
	// the fused ranking: twelve documents the hops found, then the rest
	var out []scored
	for i := range 12 {
		out = append(out, scored{id: "hop" + string(rune('a'+i))})
	}
	for _, id := range []string{"q1", "q2", "q3", "q4", "q5", "q6", "k1", "k2", "h1", "h2"} {
		out = append(out, scored{id: id})
	}
	e := New(Config{AnchorKeep: 3})
	e.keepFirsts(st, out)
	top := topIDs(out, 10)
	for _, want := range []string{"q1", "q2", "q3", "k1", "h1"} {
		if !slices.Contains(top, want) {
			t.Errorf("the top 10 %v lacks %q", top, want)
		}
	}
	for _, not := range []string{"q4", "k2", "h2"} {
		if slices.Contains(top, not) {
			t.Errorf("the top 10 %v holds %q, beyond what is kept", top, not)
		}
	}
	if top[0] != "hopa" || top[4] != "hope" {
		t.Errorf("the fused order of the documents kept in place changed: %v", top)
	}
	// none kept: the fused order stands
	fresh := func() []scored {
		var out []scored
		for i := range 12 {
			out = append(out, scored{id: "hop" + string(rune('a'+i))})
		}
		return append(out, scored{id: "q1"}, scored{id: "k1"})
	}
	out2 := fresh()
	New(Config{AnchorKeep: -1, SubKeep: -1}).keepFirsts(st, out2)
	if !slices.Equal(out2, fresh()) {
		t.Errorf("AnchorKeep and SubKeep -1 should keep nothing: %v", topIDs(out2, 10))
	}
	// a bare conjunction keeps its subjects' first hits, not the question's
	conj := &state{question: "Which film has the director born later, Ed Wood or Mars Attacks?", docs: map[string]*doc{}}
	conj.subs = subQuestions(conj.question)
	conj.lists = []resultList{{tool: ToolSearch, query: conj.question, hits: hits("q1", "q2")}}
	for _, s := range conj.subs {
		conj.lists = append(conj.lists, resultList{tool: ToolSearch, query: s, hits: hits("k1")})
	}
	out4 := fresh()
	New(Config{}).keepFirsts(conj, out4)
	if top := topIDs(out4, 10); len(conj.subs) != 2 || !slices.Contains(top, "k1") || slices.Contains(top, "q1") {
		t.Errorf("a conjunction %q: the top 10 %v should hold its subjects' hit k1 and not the question's q1", conj.subs, top)
	}
	// a chain question (no sub-questions) keeps nothing: its later
	// documents are those the hops add
	chain := &state{question: "Where was the director of the film Ed Wood born?", docs: map[string]*doc{}}
	chain.lists = []resultList{{tool: ToolSearch, query: chain.question, hits: hits("q1", "q2")}}
	out3 := fresh()
	New(Config{}).keepFirsts(chain, out3)
	if !slices.Equal(out3, fresh()) {
		t.Errorf("a chain question should keep the fused order: %v", topIDs(out3, 10))
	}
}

// TestParallelQuestionReportsEachFact: untitled notes, two facts side by
// side from two teams; notes on the same story crowd the question's own
// search. The report holds one note per fact, and what the question's own
// search found at its top.
func TestParallelQuestionReportsEachFact(t *testing.T) {
	t.Parallel()
	corpus := fakeCorpus{
		"n-oslo-leak":  "Oslo team, 3 March: the boiler failed overnight and flooded the basement storage room.",
		"n-lyon-pump":  "Lyon team, 9 March: the new pump was installed badly, which caused the leak in the plant room.",
		"n-oslo-audit": "Oslo team: the March audit of the boiler contracts found no problem with the supplier.",
		"n-oslo-boil2": "Oslo team: boiler service visits in March and April were booked with the usual supplier.",
		"n-lyon-audit": "Lyon team: the yearly audit lists the pump, the boiler and the leak detectors as assets.",
		"n-memo":       "Every team memo about a leak or a failed boiler goes to facilities within a day.",
		"n-basement":   "The basement storage room holds archive boxes and spare chairs.",
	}
	ids, _, why := corpus.run(t, New(Config{}), "Does the Oslo team's memo say the boiler failed in March, while the Lyon team's memo blames the new pump for the leak?")
	wantReported(t, ids, why, "one fact of the comparison", "n-oslo-leak", "n-lyon-pump")
	// a question of two clauses also reports the top of its own search
	// (AnchorKeep, 7), no further: the note that shares nothing with
	// either fact stays out
	if len(ids) > 7 || slices.Contains(ids, "n-basement") {
		t.Errorf("the report %v should hold at most the question's own top 7 and each fact's note, without n-basement", ids)
	}
}

// FuzzSubQuestions: any question gives sub-questions without a panic, each
// with at least two content words and none the question itself.
func FuzzSubQuestions(f *testing.F) {
	for _, s := range []string{
		"Does the Oslo memo say X, while the Lyon memo says Y?",
		"Which supplier did both Acme Tools and Globex drop?",
		"Used by The Oslo, Lyon and Turin & Co offices, and did 'A' and 'B' agree?",
		"The and The or The", ", and did , while ;", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, s := range subQuestions(q) {
			if len(terms(s)) < 2 || normQuery(s) == normQuery(q) {
				t.Errorf("subQuestions(%q) gave %q", q, s)
			}
		}
	})
}

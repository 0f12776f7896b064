package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"capsuled/internal/domain"
)

const prompt = "Tools:\n- search: semantic search {\"query\", \"limit\"}\n- text_search: keywords\n- read: full text {\"id\"}\n- report_helpful_ids: {\"ids\": [...]}"

func conv(question string, turns ...[]domain.Message) []domain.Message {
	msgs := []domain.Message{domain.TextMessage("system", prompt), domain.TextMessage("user", question)}
	for _, t := range turns {
		msgs = append(msgs, t...)
	}
	return msgs
}

func gen(t testing.TB, msgs []domain.Message) domain.Choice {
	t.Helper()
	req := &domain.ChatRequest{Model: "svc-1", Messages: msgs, ToolStub: true, ToolChoice: domain.ToolChoice{Mode: domain.ToolChoiceAuto}, ParallelToolCalls: true}
	cs, _, err := New(Config{}).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// answer makes the tool messages of a reply from a fake result function.
func answer(c domain.Choice, result func(domain.ToolCall) string) []domain.Message {
	out := []domain.Message{{Role: "assistant", ToolCalls: c.ToolCalls}}
	for _, tc := range c.ToolCalls {
		out = append(out, domain.Message{Role: "tool", ToolCallID: tc.ID, Content: []domain.Part{{Type: "text", Text: result(tc)}}})
	}
	return out
}

func TestFirstTurnPlansParallelSearches(t *testing.T) {
	t.Parallel()
	c := gen(t, conv(`Were "Scott Derrickson" and Ed Wood of the same nationality?`))
	if c.FinishReason != domain.FinishToolCalls || c.Reasoning == "" {
		t.Fatalf("%+v", c)
	}
	queries := map[string]string{}
	for _, tc := range c.ToolCalls {
		var a struct{ Query string }
		_ = json.Unmarshal([]byte(tc.Arguments), &a)
		queries[a.Query] = tc.Name
	}
	if queries["Scott Derrickson"] != "text_search" || queries["Ed Wood"] != "text_search" {
		t.Fatalf("names should go to text_search: %v", queries)
	}
	if queries[`Were "Scott Derrickson" and Ed Wood of the same nationality?`] != "search" {
		t.Fatalf("the question should go to search: %v", queries)
	}
}

func TestLoopEndsWithReportAndNeverRepeats(t *testing.T) {
	t.Parallel()
	docs := `[{"id":"d1","title":"Ed Wood","content":"Ed Wood was an American filmmaker who worked with Bela Lugosi..."},{"id":"d2","title":"Scott Derrickson","content":"Scott Derrickson is an American director."}]`
	msgs := conv("Were Scott Derrickson and Ed Wood of the same nationality?")
	seen := map[string]bool{}
	for turn := 0; turn < 10; turn++ {
		c := gen(t, msgs)
		if len(c.ToolCalls) == 0 {
			t.Fatalf("turn %d: no tool call: %+v", turn, c)
		}
		for _, tc := range c.ToolCalls {
			key := tc.Name + tc.Arguments
			if seen[key] {
				t.Fatalf("repeated %s", key)
			}
			seen[key] = true
		}
		if c.ToolCalls[0].Name == ToolReport {
			var a struct{ IDs []string }
			_ = json.Unmarshal([]byte(c.ToolCalls[0].Arguments), &a)
			if len(a.IDs) != 2 {
				t.Fatalf("reported %v", a.IDs)
			}
			return
		}
		msgs = append(msgs, answer(c, func(tc domain.ToolCall) string {
			if tc.Name == ToolRead {
				return "Ed Wood was an American filmmaker who worked with Bela Lugosi for years."
			}
			return docs
		})...)
	}
	t.Fatal("no report within 10 turns")
}

func TestOddInputNeverCrashes(t *testing.T) {
	t.Parallel()
	odd := []string{"", "null", "{", "[[[]]]", `{"error":"backend down"}`, strings.Repeat("x", 100000), "\x00\xff"}
	for _, o := range odd {
		msgs := conv("What is the capital of France?")
		c := gen(t, msgs)
		msgs = append(msgs, answer(c, func(domain.ToolCall) string { return o })...)
		c = gen(t, msgs)
		if c.FinishReason == "" {
			t.Fatalf("%q: %+v", o, c)
		}
	}
	// no user message, no system prompt, tool messages without calls
	_ = gen(t, []domain.Message{{Role: "tool", ToolCallID: "x"}})
	_ = gen(t, []domain.Message{domain.TextMessage("user", "?")})
}

func TestToolsFromPrompt(t *testing.T) {
	t.Parallel()
	ts := toolsFrom("Use `search` and report_helpful_ids.")
	if !ts.search || ts.textSearch || ts.read || !ts.report {
		t.Fatalf("%+v", ts)
	}
	if ts := toolsFrom("Be helpful."); !ts.search || !ts.textSearch || !ts.read || !ts.report {
		t.Fatalf("no protocol prompt should assume all four: %+v", ts)
	}
}

func TestUnsupportedParameters(t *testing.T) {
	t.Parallel()
	e := New(Config{})
	for raw, bad := range map[string]bool{`{"logprobs":true}`: true, `{"logprobs":false}`: false, `{"response_format":{"type":"text"}}`: false, `{"response_format":{"type":"json_object"}}`: true, `{"chat_template":"x"}`: true,
		`{"top_logprobs":0}`: false, `{"top_logprobs":2}`: true, `{"logit_bias":{}}`: false, `{"logit_bias":{"5":1}}`: true, `{"temperature":0.6,"top_k":20}`: false} {
		d := json.NewDecoder(strings.NewReader(raw))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		err := e.Check(&domain.ChatRequest{Passthrough: m})
		if (err != nil) != bad {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// BenchmarkTurn measures the engine's time for a late turn (three result
// lists of ten hits read, ranked and planned).
func BenchmarkTurn(b *testing.B) {
	var hits []map[string]string
	for i := range 10 {
		hits = append(hits, map[string]string{"id": "doc" + string(rune('a'+i)), "title": "Title Number " + string(rune('A'+i)),
			"content": strings.Repeat("The Quick Brown Fox jumped over Lazy Dogs in Paris and London during 1999. ", 8) + "…"})
	}
	res, _ := json.Marshal(hits)
	msgs := conv("Which city hosted the event where the band that recorded Abbey Road first played?")
	c := gen(b, msgs)
	msgs = append(msgs, answer(c, func(domain.ToolCall) string { return string(res) })...)
	b.ResetTimer()
	for b.Loop() {
		gen(b, msgs)
	}
}

func TestLeadTitle(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"Ed Wood (film) Ed Wood is a 1994 American biographical film.", "Ed Wood (film)"},
		{"Irish Home Rule movement The Irish Home Rule movement was a movement.", "Irish Home Rule movement"},
		{"Adrian Conan Doyle Adrian Malcolm Conan Doyle (19 November 1910) was the youngest son.", "Adrian Conan Doyle"},
		{"The Beatles The Beatles were an English rock band.", "The Beatles"},
		{"Paris Paris is the capital of France.", "Paris"},
		{"Caroline: Hey Mel! Good to see you.", ""},
		{"the river flows the river", ""},
		{"Single", ""},
		{"", ""},
		{"Melanie: I went to the park. Melanie likes parks.", ""},
		{"Rakesh Roshan( born Rakesh Roshan Lal Nagrath on 6 September 1949) is an Indian producer.", "Rakesh Roshan"},
		// a definition whose words come back by chance has no title of
		// its own (leadEntity reads its subject)
		{"Hugo Gernsback (born Hugo Gernsbacher, August 16, 1884) was a writer.", ""},
		{"The View from the Bottom is the fifth studio album by the band.", ""},
	}
	for _, tt := range tests {
		if got := leadTitle(tt.text); got != tt.want {
			t.Errorf("leadTitle(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestUntitledKeepsQuestionOrder: on chat turns (no titles) the policy does
// not hop, and its report keeps the order of the search for the question,
// the other lists' documents after it.
func TestChatTurnsKeepQuestionOrder(t *testing.T) {
	t.Parallel()
	question := "What books has Melanie read?"
	turn := func(ids ...string) string {
		var hits []map[string]string
		for _, id := range ids {
			hits = append(hits, map[string]string{"id": id, "content": "Melanie: I read a book about " + id + " last week, it was great!"})
		}
		b, _ := json.Marshal(hits)
		return string(b)
	}
	msgs := conv(question)
	c := gen(t, msgs)
	msgs = append(msgs, answer(c, func(tc domain.ToolCall) string {
		var a struct{ Query string }
		_ = json.Unmarshal([]byte(tc.Arguments), &a)
		if tc.Name == ToolSearch && a.Query == question {
			return turn("D1:3", "D2:7", "D5:1")
		}
		return turn("D9:9", "D5:1", "D8:2") // the keyword and name lists
	})...)
	c = gen(t, msgs)
	if len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != ToolReport {
		t.Fatalf("want the report at once, got %+v", c)
	}
	var a struct{ IDs []string }
	_ = json.Unmarshal([]byte(c.ToolCalls[0].Arguments), &a)
	want := []string{"D1:3", "D2:7", "D5:1"}
	if len(a.IDs) != 5 || strings.Join(a.IDs[:3], ",") != strings.Join(want, ",") {
		t.Fatalf("reported %v, want %v first, then the other two", a.IDs, want)
	}
	if !strings.Contains(c.Reasoning, "chat turns") {
		t.Errorf("the reasoning should say why it stops: %q", c.Reasoning)
	}
}

// TestTitlesFromText: hits without a title field, stored as "title text",
// get their title from the text's lead.
func TestTitlesFromText(t *testing.T) {
	t.Parallel()
	msgs := conv("Who directed Ed Wood?")
	c := gen(t, msgs)
	msgs = append(msgs, answer(c, func(domain.ToolCall) string {
		return `[{"id":"d1","content":"Ed Wood (film) Ed Wood is a 1994 American biographical film directed by Tim Burton."},
			{"id":"d2","content":"Tim Burton Timothy Walter \"Tim\" Burton is an American filmmaker."},
			{"id":"d3","content":"Caroline: I saw a film yesterday."}]`
	})...)
	st := readState(msgs, nil)
	for id, want := range map[string]string{"d1": "Ed Wood (film)", "d2": "Tim Burton", "d3": ""} {
		if got := st.docs[id].title; got != want {
			t.Errorf("%s: title %q, want %q", id, got, want)
		}
	}
}

func FuzzLeadTitle(f *testing.F) {
	for _, s := range []string{"Ed Wood (film) Ed Wood is a film.", "Kaiyuan, Liaoning Kaiyuan is a city.", "Caroline: hi", "", "A A A A", "( ( ) )"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		title := leadTitle(text)
		if title != "" && !strings.HasPrefix(strings.Join(strings.Fields(text), " "), title) {
			t.Fatalf("leadTitle(%q) = %q, not a lead of the text", text, title)
		}
	})
}

func TestSpeaker(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"Melanie: I went camping with the kids.", "Melanie"},
		{"Dr. Jane Smith: hello", "Dr. Jane Smith"},
		{"melanie: lower case is no label", ""},
		{"Note: this is a note", "Note"},
		{"The time was 10:30 when we left", ""},
		{"No colon here", ""},
		{": empty label", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := speaker(tt.text); got != tt.want {
			t.Errorf("speaker(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	for s, want := range map[string]bool{"What books has Melanie read?": true, "Melanies are flowers": false, "Melanie": true, "AMelanie": false} {
		if got := containsWord(s, "Melanie"); got != want {
			t.Errorf("containsWord(%q, Melanie) = %v, want %v", s, got, want)
		}
	}
}

// TestNamedSpeakerFirst: when the question names a speaker of the chat, the
// other speakers' turns go after the named one's among the question's own
// hits, and every hit of the question's own search stays ahead of turns only
// the keyword and name searches found (the loop keeps what one search
// found).
func TestNamedSpeakerFirst(t *testing.T) {
	t.Parallel()
	question := "What books has Melanie read?"
	hit := func(id, who string) map[string]string {
		return map[string]string{"id": id, "content": who + ": I read a book about " + id + " last week, it was great!"}
	}
	msgs := conv(question)
	c := gen(t, msgs)
	msgs = append(msgs, answer(c, func(tc domain.ToolCall) string {
		var a struct{ Query string }
		_ = json.Unmarshal([]byte(tc.Arguments), &a)
		hits := []map[string]string{hit("D9:1", "Melanie"), hit("D9:2", "Melanie")}
		if tc.Name == ToolSearch && a.Query == question {
			hits = []map[string]string{hit("D1:1", "Caroline"), hit("D1:2", "Melanie"), hit("D1:3", "Caroline"), hit("D1:4", "Melanie")}
		}
		b, _ := json.Marshal(hits)
		return string(b)
	})...)
	c = gen(t, msgs)
	var a struct{ IDs []string }
	if len(c.ToolCalls) != 1 || json.Unmarshal([]byte(c.ToolCalls[0].Arguments), &a) != nil {
		t.Fatalf("want the report, got %+v", c)
	}
	if got, want := strings.Join(a.IDs, ","), "D1:2,D1:4,D1:1,D1:3,D9:1,D9:2"; got != want {
		t.Fatalf("reported %s, want %s", got, want)
	}
}

// TestBridgeWithUncoveredTerms: a bridge entity is looked up by name and
// together with the question's terms the top document lacks.
func TestBridgeWithUncoveredTerms(t *testing.T) {
	t.Parallel()
	msgs := conv("What nationality is the director of Ed Wood?")
	c := gen(t, msgs)
	msgs = append(msgs, answer(c, func(domain.ToolCall) string {
		return `[{"id":"d1","content":"Ed Wood (film) Ed Wood is a 1994 American film directed by Tim Burton."}]`
	})...)
	c = gen(t, msgs)
	calls := map[string]string{}
	for _, tc := range c.ToolCalls {
		var a struct{ Query string }
		_ = json.Unmarshal([]byte(tc.Arguments), &a)
		calls[a.Query] = tc.Name
	}
	if calls["Tim Burton"] != ToolTextSearch || calls["Tim Burton nationality director"] != ToolSearch {
		t.Fatalf("want text_search \"Tim Burton\" and search \"Tim Burton nationality director\", got %v\n%s", calls, c.Reasoning)
	}
}

func TestFieldsN(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "  ", "a", " a  b\tc\n d ", "Ed Wood (film) Ed Wood is a 1994 American film.", "x\u00a0y\u2003z w"} {
		for n := 1; n <= 5; n++ {
			want := strings.Fields(s)
			want = want[:min(n, len(want))]
			if got := fieldsN(s, n); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Errorf("fieldsN(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
}

// FuzzLower checks that lower is strings.ToLower, and that the words of a
// lower-cased text are its words lower-cased (state.has reads the
// lower-cased text).
func FuzzLower(f *testing.F) {
	for _, s := range []string{"", "plain", "Ed Wood", "“Quoted” …", "İstanbul KELVIN \u212a", "a\xffB", "ΣΊΣΥΦΟΣ", "Ⅻ Roman"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := lower(s), strings.ToLower(s); got != want {
			t.Fatalf("lower(%q) = %q, strings.ToLower %q", s, got, want)
		}
		var a, b []string
		eachWord(s, func(w string) { a = append(a, strings.ToLower(w)) })
		eachWord(lower(s), func(w string) { b = append(b, w) })
		if !slices.Equal(a, b) {
			t.Fatalf("%q: words lower-cased %q, words of the lower-cased text %q", s, a, b)
		}
	})
}

// TestSubjectFromAnotherPassage: a long document's longest passage need
// not be its start. When it names no subject, the document's subject comes
// from another passage of it that the searches showed, so the documents
// naming that subject link to it; a longest passage that names one keeps
// it.
func TestSubjectFromAnotherPassage(t *testing.T) {
	t.Parallel()
	msgs := conv("Where was the director of Einer spinnt immer born?")
	c := gen(t, msgs)
	n := 0
	msgs = append(msgs, answer(c, func(domain.ToolCall) string {
		n++
		if n == 1 {
			return `[{"id":"d1","content":"After the screening, people should say: well now, I am in a good mood, I will go and have a drink, and the evening was worth it. That was what the films were for."},
				{"id":"d2","content":"Einer spinnt immer is a 1971 Austrian film directed by Franz Antel."},
				{"id":"d3","content":"Ingrid Berg speaks Norwegian and English, and joined the company in 2012 after a long stay abroad in Lyon and Marseille."}]`
		}
		return `[{"id":"d1","content":"Franz Antel( 28 June 1913 – 11 August 2007) was a veteran Austrian filmmaker."},
			{"id":"d3","content":"The Oslo office is managed by Ingrid Berg."}]`
	})...)
	st := readState(msgs, nil)
	for id, want := range map[string]string{"d1": "franz antel", "d3": "ingrid berg"} {
		if got := st.docs[id].key; got != want {
			t.Errorf("%s: subject key %q, want %q", id, got, want)
		}
	}
}

// TestRepeatedPassageTakesOnePlace: a passage the searches show again and
// again is kept once among a document's other passages, so a later passage
// that names the document's subject still finds a place (maxOther).
func TestRepeatedPassageTakesOnePlace(t *testing.T) {
	t.Parallel()
	var c domain.Choice
	for i := range maxOther + 3 {
		c.ToolCalls = append(c.ToolCalls, domain.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: ToolSearch,
			Arguments: fmt.Sprintf(`{"query":"Einer spinnt immer director %d"}`, i)})
	}
	n := 0
	msgs := conv("Where was the director of Einer spinnt immer born?", answer(c, func(domain.ToolCall) string {
		n++
		switch {
		case n == 1:
			return `[{"id":"d1","content":"After the screening, people should say: well now, I am in a good mood, I will go and have a drink, and the evening was worth it. That was what the films were for."}]`
		case n <= 2+maxOther:
			return `[{"id":"d1","content":"His films were popular with audiences for decades."}]`
		default:
			return `[{"id":"d1","content":"Franz Antel( 28 June 1913 – 11 August 2007) was a veteran Austrian filmmaker."}]`
		}
	}))
	st := readState(msgs, nil)
	if got := st.docs["d1"].key; got != "franz antel" {
		t.Errorf("subject key %q, want %q (other passages %q)", got, "franz antel", st.docs["d1"].other)
	}
}

// TestShorterPassageSeenFirst: a passage that names the document's subject
// and was seen before a longer one that names none stays among its other
// passages, and gives the subject.
func TestShorterPassageSeenFirst(t *testing.T) {
	t.Parallel()
	var c domain.Choice
	for i := range 2 {
		c.ToolCalls = append(c.ToolCalls, domain.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: ToolSearch,
			Arguments: fmt.Sprintf(`{"query":"Einer spinnt immer director %d"}`, i)})
	}
	n := 0
	msgs := conv("Where was the director of Einer spinnt immer born?", answer(c, func(domain.ToolCall) string {
		n++
		if n == 1 {
			return `[{"id":"d1","content":"Franz Antel( 28 June 1913 – 11 August 2007) was a veteran Austrian filmmaker."}]`
		}
		return `[{"id":"d1","content":"After the screening, people should say: well now, I am in a good mood, I will go and have a drink, and the evening was worth it. That was what the films were for."}]`
	}))
	st := readState(msgs, nil)
	if got := st.docs["d1"].key; got != "franz antel" {
		t.Errorf("subject key %q, want %q (other passages %q)", got, "franz antel", st.docs["d1"].other)
	}
}

// TestNicknameLinksDocuments: an untitled document that defines its subject
// with a quoted nickname ("Margaret Ellen "Peggy" Lindqvist") is named by
// the nickname elsewhere ("recorded by Peggy Lindqvist"), and the two link.
func TestNicknameLinksDocuments(t *testing.T) {
	t.Parallel()
	var c domain.Choice
	c.ToolCalls = []domain.ToolCall{{ID: "call_0", Name: ToolSearch, Arguments: `{"query":"father of the singer of Harbor Lights"}`}}
	msgs := conv("Who is the father of the singer of Harbor Lights?", answer(c, func(domain.ToolCall) string {
		return `[{"id":"d1","content":"Harbor Lights is a 1998 song recorded by Peggy Lindqvist for her second album."},
			{"id":"d2","content":"Margaret Ellen \"Peggy\" Lindqvist (born 1950) is a Swedish singer, the daughter of the fiddler Anders Lindqvist."}]`
	}))
	st := readState(msgs, nil)
	d1, d2 := st.docs["d1"], st.docs["d2"]
	if d2.key != "margaret ellen lindqvist" || !slices.Contains(d2.alt, "peggy lindqvist") {
		t.Fatalf("subject %q, other forms %q", d2.key, d2.alt)
	}
	if !mentionsDoc(d1.low, d2) || !st.namesDoc(d1, d2, true) {
		t.Errorf("the song's document does not name the singer's by her nickname")
	}
}

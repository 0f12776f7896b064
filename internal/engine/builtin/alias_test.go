package builtin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"capsuled/internal/domain"
)

func TestInitials(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"Sam Bankman-Fried":                  "SBF",
		"Securities and Exchange Commission": "SEC",
		"Infrastructure Review Committee":    "IRC",
		"Bank of the West":                   "BW",
		"the release board":                  "",
		"Priya Natarajan Kumar":              "PNK",
	} {
		if got := initials(name); got != want {
			t.Errorf("initials(%q) = %q, want %q", name, got, want)
		}
	}
	for w, want := range map[string]bool{"SBF": true, "IRC": true, "AI": false, "Sbf": false, "ABCDEFG": false, "R2D": false} {
		if got := isShortForm(w); got != want {
			t.Errorf("isShortForm(%q) = %v", w, got)
		}
	}
}

// searchesOf returns the queries of the reply's calls of one tool.
func searchesOf(c domain.Choice, tool string) []string {
	var out []string
	for _, tc := range c.ToolCalls {
		var a struct{ Query string }
		_ = json.Unmarshal([]byte(tc.Arguments), &a)
		if tc.Name == tool {
			out = append(out, a.Query)
		}
	}
	return out
}

// TestAliasesFromText: untitled memos and tickets. A question that writes a
// short form finds the name it stands for in a document seen (and the other
// way round); the next hop looks the other form up by keyword, and a
// document that writes only the other form counts as holding the
// question's form.
func TestAliasesFromText(t *testing.T) {
	t.Parallel()
	// the question writes the short form; a ticket writes the name
	q := "Which laptops did the IRC approve for the Lyon office?"
	msgs := conv(q)
	c := gen(t, msgs)
	msgs = append(msgs, answer(c, func(domain.ToolCall) string {
		return `[{"id":"t-101","content":"Ticket 101, 4 May: the Infrastructure Review Committee approved twelve laptops for the Lyon office."},
		{"id":"t-102","content":"Ticket 102: the Lyon office asked for new chairs and a second printer."}]`
	})...)
	st := readState(msgs, nil)
	if len(st.aliases) != 1 || st.aliases[0].long != "Infrastructure Review Committee" || st.aliases[0].short != "IRC" || !st.aliases[0].shortInQ {
		t.Fatalf("aliases %+v, want IRC for Infrastructure Review Committee", st.aliases)
	}
	if !st.has(st.docs["t-101"])[st.qidx["irc"]] {
		t.Error("t-101 writes the committee's name: it should hold the question's IRC")
	}
	if st.has(st.docs["t-102"])[st.qidx["irc"]] {
		t.Error("t-102 names no committee")
	}
	c = gen(t, msgs)
	if !slices.Contains(searchesOf(c, ToolTextSearch), "Infrastructure Review Committee") {
		t.Errorf("the next hop should look up the name IRC stands for: %q\n%s", searchesOf(c, ToolTextSearch), c.Reasoning)
	}

	// the question writes the name; a decision log writes the initials
	q = "When did Priya Natarajan Kumar move the Oslo release?"
	msgs = conv(q)
	c = gen(t, msgs)
	msgs = append(msgs, answer(c, func(domain.ToolCall) string {
		return `[{"id":"log-3","content":"Decision log, 3 June: PNK moved the Oslo release to Friday after the failed smoke test."},
		{"id":"memo-9","content":"Memo: the Oslo release notes are in the shared folder."}]`
	})...)
	st = readState(msgs, nil)
	if len(st.aliases) != 1 || st.aliases[0].short != "PNK" || st.aliases[0].shortInQ {
		t.Fatalf("aliases %+v, want PNK for Priya Natarajan Kumar", st.aliases)
	}
	if h := st.has(st.docs["log-3"]); !h[st.qidx["priya"]] || !h[st.qidx["kumar"]] {
		t.Error("log-3 writes PNK: it should hold the question's name")
	}
	c = gen(t, msgs)
	if !slices.Contains(searchesOf(c, ToolTextSearch), "PNK") {
		t.Errorf("the next hop should look up PNK: %q\n%s", searchesOf(c, ToolTextSearch), c.Reasoning)
	}

	// no link: lower-case "sec" is no short form, and a name whose
	// initials no document writes links nothing
	q = "Did the Securities and Exchange Commission fine Acme Freight?"
	msgs = conv(q, answer(gen(t, conv(q)), func(domain.ToolCall) string {
		return `[{"id":"n1","content":"Acme Freight paid a fine within a sec of the ruling."}]`
	}))
	if st = readState(msgs, nil); len(st.aliases) != 0 {
		t.Errorf("aliases %+v, want none", st.aliases)
	}
}

// FuzzShortFormsOf: any text gives short forms that are the initials of
// their names, without a panic.
func FuzzShortFormsOf(f *testing.F) {
	for _, s := range []string{"The Federal Trade Commission (FTC) sued.", "Sam Bankman-Fried, or SBF, said", "", "A-B-C D-E-F", strings.Repeat("Acme Bolt Corp ", 400)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for short, long := range shortFormsOf(s) {
			if initials(long) != short || !isShortForm(short) {
				t.Fatalf("shortFormsOf(%q): %q for %q", s, short, long)
			}
		}
	})
}

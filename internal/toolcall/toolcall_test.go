package toolcall

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		calls []Call
		rest  string
	}{
		{"no calls", "just text", nil, "just text"},
		{"one call", `a <tool_call>{"name":"search","arguments":{"query":"x","limit":3}}</tool_call> b`,
			[]Call{{"search", `{"limit":3,"query":"x"}`}}, "a  b"},
		{"string arguments", `<tool_call>{"name":"read","arguments":"{\"id\":\"d1\"}"}</tool_call>`,
			[]Call{{"read", `{"id":"d1"}`}}, ""},
		{"parameters key", `<tool_call>{"name":"read","parameters":{"id":"d1"}}</tool_call>`,
			[]Call{{"read", `{"id":"d1"}`}}, ""},
		{"function wrapper", `<tool_call>{"function":{"name":"read","arguments":{"id":"d1"}}}</tool_call>`,
			[]Call{{"read", `{"id":"d1"}`}}, ""},
		{"unclosed last", `x<tool_call>{"name":"search","arguments":{"query":"q"}}`,
			[]Call{{"search", `{"query":"q"}`}}, "x"},
		{"two in one block", "<tool_call>\n{\"name\":\"a\",\"arguments\":{}}\n{\"name\":\"b\",\"arguments\":{}}\n</tool_call>",
			[]Call{{"a", "{}"}, {"b", "{}"}}, ""},
		{"garbage block kept", `<tool_call>not json</tool_call>`, nil, `<tool_call>not json</tool_call>`},
		{"no name", `<tool_call>{"arguments":{}}</tool_call>`, nil, `<tool_call>{"arguments":{}}</tool_call>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls, rest := Parse(tt.in)
			if diff := cmp.Diff(tt.calls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if rest != tt.rest {
				t.Errorf("rest = %q, want %q", rest, tt.rest)
			}
		})
	}
}

func TestParseFixture(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/hermes_qwen.txt")
	if err != nil {
		t.Fatal(err)
	}
	calls, rest := Parse(string(b))
	want := []Call{{"search", `{"limit":10,"query":"Ed Wood film director"}`}, {"text_search", `{"limit":5,"query":"Scott Derrickson"}`}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if rest != "<think>The user asks about two films; search both.</think>" {
		t.Errorf("rest = %q", rest)
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	read := []struct {
		in, want string
		err      bool
	}{
		{`{"id":"d1"}`, "d1", false},
		{`{"doc_id":"d2"}`, "d2", false},
		{`{"item_id":"itm_3"}`, "itm_3", false},
		{`{"ids":["d4"]}`, "d4", false},
		{`{"id":17}`, "17", false},
		{`{}`, "", true},
		{`nope`, "", true},
	}
	for _, tt := range read {
		got, err := ReadArgs(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ReadArgs(%s) = %q, %v", tt.in, got, err)
		}
	}
	report := []struct {
		in   string
		want []string
		err  bool
	}{
		{`{"ids":["a","b"]}`, []string{"a", "b"}, false},
		{`{"helpful_ids":["a"]}`, []string{"a"}, false},
		{`{"doc_ids":"a, b ,c"}`, []string{"a", "b", "c"}, false},
		{`{"ids":[]}`, nil, false},
		{`{"ids":[{"id":"x"},1]}`, []string{"x", "1"}, false},
		{`{"other":1}`, nil, true},
	}
	for _, tt := range report {
		got, err := ReportArgs(tt.in)
		if !cmp.Equal(got, tt.want) || (err != nil) != tt.err {
			t.Errorf("ReportArgs(%s) = %q, %v", tt.in, got, err)
		}
	}
	q, n, err := SearchArgs(`{"query":"who","limit":5}`)
	if q != "who" || n != 5 || err != nil {
		t.Errorf("SearchArgs = %q %d %v", q, n, err)
	}
	// a query is text: its commas stay (the search for the question is the
	// question, not the question without its punctuation)
	if q, _, _ := SearchArgs(`{"query":"Which company, reported by Acme, makes it?"}`); q != "Which company, reported by Acme, makes it?" {
		t.Errorf("SearchArgs dropped the commas: %q", q)
	}
	if q, _, _ := SearchArgs(`{"queries":["oslo office","lyon office"]}`); q != "oslo office lyon office" {
		t.Errorf("SearchArgs of a list = %q", q)
	}
	if _, _, err := SearchArgs(`{"limit":5}`); !errors.Is(err, ErrNoArgument) {
		t.Errorf("SearchArgs without query: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "<tool_call>", "<tool_call>{}</tool_call>", `<tool_call>{"name":"a","arguments":"{"}</tool_call>`, "<tool_call>[{\"name\":\"x\"}]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		calls, _ := Parse(s)
		for _, c := range calls {
			if c.Name == "" || c.Arguments == "" {
				t.Fatalf("bad call %+v", c)
			}
			_, _, _ = SearchArgs(c.Arguments)
			_, _ = ReadArgs(c.Arguments)
			_, _ = ReportArgs(c.Arguments)
		}
		_, _ = ReportArgs(s)
		_, _ = ReadArgs(s)
	})
}

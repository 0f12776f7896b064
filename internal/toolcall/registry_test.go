package toolcall

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	p, err := Lookup("")
	if err != nil || p.Name() != "hermes" {
		t.Fatalf("default: %v %v", p.Name(), err)
	}
	for _, n := range []string{"hermes", "mistral", "llama3_json", "pythonic", "qwen3_xml", "deepseek_v3", "granite", "kimi_k2", "glm45", "openai"} {
		if _, err := Lookup(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	_, err = Lookup("hermes2")
	if err == nil || !strings.Contains(err.Error(), `"hermes2"`) || !strings.Contains(err.Error(), strings.Join(Names(), ", ")) {
		t.Fatalf("unknown name: %v", err)
	}
}

// Text that looks like a format but holds no valid call is kept whole.
func TestMalformedStaysText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ parser, text string }{
		{"mistral", "[TOOL_CALLS] not json"},
		{"mistral", "[TOOL_CALLS]search[ARGS]not json"},
		{"llama3_json", `{"name": 3}`},
		{"llama3_json", `The JSON {"name": "search"} is quoted`},
		{"pythonic", "[search(query=)]"},
		{"pythonic", "[search(query='unterminated)]"},
		{"pythonic", "[a, b]"},
		{"qwen3_xml", "<function=>\n</function>"},
		{"deepseek_v3", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>x\n```json\nnope\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{"granite", "<|tool_call|>[1, 2]"},
		{"kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.x:0<|tool_call_argument_begin|>[1]<|tool_call_end|><|tool_calls_section_end|>"},
		{"glm45", "<tool_call>{\"name\": \"x\"}</tool_call>"},
		{"openai", "no harmony here"},
	} {
		p, err := Lookup(tc.parser)
		if err != nil {
			t.Fatal(err)
		}
		calls, rest := p.Parse(tc.text)
		if len(calls) != 0 || rest != tc.text {
			t.Errorf("%s %q: calls %v rest %q, want the text unchanged", tc.parser, tc.text, calls, rest)
		}
	}
}

// FuzzParsers runs every registered tool-call parser on any text: no panic,
// every call has a name and a JSON object as arguments, and the text left
// is no longer than the text given.
func FuzzParsers(f *testing.F) {
	b, err := os.ReadFile("testdata/parsers.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add(c.Text)
	}
	f.Add("[search(q={'a': [1, (2, 3)], 'b': -1.5e3}), x()]")
	f.Add("<tool_call>x<arg_key>k</arg_key><arg_value>{\"a\":1}</arg_value></tool_call>")
	var parsers []Parser
	for _, n := range Names() {
		p, err := Lookup(n)
		if err != nil {
			f.Fatal(err)
		}
		parsers = append(parsers, p)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range parsers {
			calls, rest := p.Parse(text)
			if len(rest) > len(text) {
				t.Fatalf("%s: rest %q longer than text %q", p.Name(), rest, text)
			}
			if utf8.ValidString(text) && !utf8.ValidString(rest) {
				t.Fatalf("%s: rest %q is not UTF-8", p.Name(), rest)
			}
			for _, c := range calls {
				var m map[string]any
				if c.Name == "" || len(c.Name) > maxNameLen || json.Unmarshal([]byte(c.Arguments), &m) != nil || m == nil {
					t.Fatalf("%s: bad call %+v from %q", p.Name(), c, text)
				}
			}
		}
	})
}

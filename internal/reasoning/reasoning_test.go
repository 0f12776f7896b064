package reasoning

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ parser, text, reasoning, content string }{
		{"qwen3", "<think>a</think>b", "a", "b"},
		{"qwen3", "a</think>b", "a", "b"},
		{"qwen3", "plain", "", "plain"},
		{"qwen3", "<think>stopped", "stopped", ""},
		{"qwen3", "x <think>y</think> z", "", "x <think>y</think> z"},
		{"deepseek_r1", "a</think>b", "a", "b"},
		{"deepseek_r1", "<think>a</think>\n\nb", "a", "b"},
		{"deepseek_r1", "all reasoning", "all reasoning", ""},
		{"reasoning_content", "<think>a</think>b", "", "<think>a</think>b"},
		{"openai_gptoss", "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c<|return|>", "r", "c"},
		{"openai_gptoss", "no harmony", "", "no harmony"},
	} {
		p, err := Lookup(tc.parser)
		if err != nil {
			t.Fatal(err)
		}
		r, c := p.Split(tc.text)
		if r != tc.reasoning || c != tc.content {
			t.Errorf("%s %q: (%q, %q), want (%q, %q)", tc.parser, tc.text, r, c, tc.reasoning, tc.content)
		}
	}
	if p, err := Lookup(""); err != nil || p.Name() != DefaultParser {
		t.Fatalf("default: %v", err)
	}
	if _, err := Lookup("r1"); err == nil || !strings.Contains(err.Error(), strings.Join(Names(), ", ")) {
		t.Fatalf("unknown name: %v", err)
	}
}

// FuzzParsers runs every reasoning parser on any text: no panic, and what
// the <think> parsers return is no longer than the text given.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{"<think>a</think>b", "a</think>b", "<think>", "</think>", "<|channel|>analysis<|message|>x<|end|>", "<|message|><|message|>to=<|channel|>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, n := range Names() {
			p, _ := Lookup(n)
			r, c := p.Split(text)
			if n != "openai_gptoss" && len(r)+len(c) > len(text) {
				t.Fatalf("%s: (%q, %q) longer than %q", n, r, c, text)
			}
			if utf8.ValidString(text) && (!utf8.ValidString(r) || !utf8.ValidString(c)) {
				t.Fatalf("%s: invalid UTF-8 out of %q", n, text)
			}
		}
	})
}

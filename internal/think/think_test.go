package think

import "testing"

func TestStrip(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"no block", "plain answer", "plain answer"},
		{"empty", "", ""},
		{"leading block", "<think>\nreason\n</think>\n\nanswer", "answer"},
		{"leading whitespace", " \n\t<think>r</think>  answer", "answer"},
		{"whitespace kept inside the text", "<think>r</think>\n a  b \n", "a  b \n"},
		{"unclosed block", "<think>still reasoning", ""},
		{"unclosed after text", "answer <think>more", "answer "},
		{"several blocks", "<think>a</think>one <think>b</think>two", "one two"},
		{"nested", "<think>a<think>b</think>c</think>d", "d"},
		{"closing tag only (opened in the prompt)", "reasoning continued\n</think>\n\nanswer", "answer"},
		{"block in the middle", "before <think>x</think>after", "before after"},
		{"tags inside words", "a<think>b</think>c", "ac"},
	} {
		if got := Strip(tt.in); got != tt.want {
			t.Errorf("%s: Strip(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"":                               false,
		"Let me":                         false,
		"<think>\nLet me":                true,
		"<think>a</think>b":              false,
		"<think>a</think>b<think>c":      true,
		"  <think>":                      true,
		"</think> stray close":           false,
		"<think>a<think>b</think>still?": false,
	} {
		if got := Open(in); got != want {
			t.Errorf("Open(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestBlock(t *testing.T) {
	t.Parallel()
	if got := Block("  r \n"); got != "<think>\nr\n</think>\n\n" {
		t.Errorf("Block = %q", got)
	}
	if got := Block(" \n"); got != "" {
		t.Errorf("empty reasoning: Block = %q", got)
	}
}

func FuzzStrip(f *testing.F) {
	for _, s := range []string{"<think>a</think>b", "<think>", "</think>x", "a<think>b<think>c</think>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Strip(s)
		if len(out) > len(s) {
			t.Fatalf("Strip grew %q to %q", s, out)
		}
		if Open(out) {
			t.Fatalf("Strip(%q) = %q still ends inside a block", s, out)
		}
	})
}

// Package think handles the <think>…</think> blocks in which models and the
// svc-1 engines write their reasoning inside message content: it removes
// them (Strip), tells whether a text ends inside an open block (Open), and
// renders one (Block). The chat service, the memory service and the reasoning
// parsers (internal/reasoning) all use it, so a block means the same
// everywhere.
package think

import "strings"

// The tags of a reasoning block.
const (
	OpenTag  = "<think>"
	CloseTag = "</think>"
)

// Strip removes the reasoning blocks from s and the whitespace before the
// text that remains:
//   - every closed <think>…</think> block (a nested opening tag is part of
//     the block it is in, and the closing tag left over after it is removed
//     by the next rule);
//   - an unclosed <think> and everything after it (the reply stopped while
//     reasoning);
//   - everything up to a closing tag that has no opening tag before it (the
//     opening tag was in the prompt, as with a prefilled reply).
func Strip(s string) string {
	for {
		i := strings.Index(s, OpenTag)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], CloseTag)
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+len(CloseTag):]
	}
	if j := strings.Index(s, CloseTag); j >= 0 {
		s = s[j+len(CloseTag):]
	}
	return strings.TrimLeft(s, " \t\r\n")
}

// Open reports whether s ends inside a reasoning block: its last opening tag
// has no closing tag after it.
func Open(s string) bool {
	i := strings.LastIndex(s, OpenTag)
	return i >= 0 && !strings.Contains(s[i:], CloseTag)
}

// Block renders reasoning as the block that starts a reply, followed by an
// empty line; empty reasoning renders as "".
func Block(reasoning string) string {
	r := strings.TrimSpace(reasoning)
	if r == "" {
		return ""
	}
	return OpenTag + "\n" + r + "\n" + CloseTag + "\n\n"
}

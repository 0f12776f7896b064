// Package reasoning separates a model's reasoning from its answer when the
// model server returns both in the content, with parsers chosen by the
// names vLLM gives them (--reasoning-parser), so a deployment passes one
// name to both:
//
//   - deepseek_r1: reasoning up to </think> (the opening <think> is in the
//     prompt, so it may be missing); a reply with no </think> is all
//     reasoning, as vLLM reads it.
//   - qwen3: a <think>…</think> block at the start; a reply with no
//     </think> is all answer, unless it opened a block that never closed
//     (the reply stopped while reasoning).
//   - reasoning_content: the server separates reasoning itself (vLLM with a
//     reasoning parser, llama-server with --reasoning-format); the content
//     is not parsed.
//   - openai_gptoss: the analysis channel of OpenAI's harmony format
//     (gpt-oss, Context-1); the tool-call messages stay in the text for the
//     openai tool-call parser.
//
// A reasoning field sent by the server (reasoning_content or reasoning)
// always wins over parsing. Parsers work on a whole reply: a streamed reply
// is accumulated first, so chunk boundaries do not matter.
package reasoning

import (
	"strings"

	"capsuled/internal/registry"
	"capsuled/internal/think"
	"capsuled/internal/toolcall"
)

// Parser splits a reply's text into reasoning and answer.
type Parser struct {
	name  string
	split func(text string) (reasoning, content string)
}

// Name is the parser's registry name.
func (p Parser) Name() string { return p.name }

// Split returns the reasoning in text and the answer without it.
func (p Parser) Split(text string) (reasoning, content string) {
	if p.split == nil {
		return qwen3(text)
	}
	return p.split(text)
}

// parsers is the registry: vLLM's reasoning-parser names and the functions
// that split their formats.
var parsers = registry.New("reasoning parser", DefaultParser, map[string]func(string) (string, string){
	"deepseek_r1":       deepseekR1,
	"qwen3":             qwen3,
	"reasoning_content": func(s string) (string, string) { return "", s },
	"openai_gptoss": func(s string) (string, string) {
		r, rest, _ := toolcall.HarmonyReasoning(s)
		return r, rest
	},
})

// DefaultParser is the parser of an empty name.
const DefaultParser = "qwen3"

// Names lists the registered parser names, sorted.
func Names() []string { return parsers.Names() }

// Lookup returns the parser registered under name ("" is DefaultParser); an
// unknown name is an error that lists the known ones.
func Lookup(name string) (Parser, error) {
	name, f, err := parsers.Lookup(name)
	if err != nil {
		return Parser{}, err
	}
	return Parser{name: name, split: f}, nil
}

func deepseekR1(s string) (string, string) {
	j := strings.Index(s, think.CloseTag)
	if j < 0 {
		t := strings.TrimSpace(s)
		return strings.TrimSpace(strings.TrimPrefix(t, think.OpenTag)), ""
	}
	r := strings.TrimSpace(s[:j])
	r = strings.TrimSpace(strings.TrimPrefix(r, think.OpenTag))
	return r, strings.TrimSpace(s[j+len(think.CloseTag):])
}

func qwen3(s string) (string, string) {
	t := strings.TrimSpace(s)
	j := strings.Index(t, think.CloseTag)
	if !strings.HasPrefix(t, think.OpenTag) {
		if j < 0 || strings.Contains(t[:j], think.OpenTag) {
			return "", s
		}
		// The opening tag was in the prompt.
		return strings.TrimSpace(t[:j]), strings.TrimSpace(t[j+len(think.CloseTag):])
	}
	if j < 0 {
		return strings.TrimSpace(t[len(think.OpenTag):]), "" // stopped while reasoning
	}
	return strings.TrimSpace(t[len(think.OpenTag):j]), strings.TrimSpace(t[j+len(think.CloseTag):])
}

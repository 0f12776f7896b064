package memory

import (
	"context"
	"strings"

	"capsuled/internal/domain"
)

// A Generator writes the assistant's reply for the models it serves.
type Generator interface {
	// Models are the model ids it answers to.
	Models() []string
	Generate(ctx context.Context, in GenerateInput) (domain.Completion, error)
}

// GenerateInput is the prompt of one reply.
type GenerateInput struct {
	Model string
	// Messages are the caller's messages with the memory block added.
	Messages []domain.Message
	// Memories are the memories of the block, best first.
	Memories []Selected
	// Request is the caller's request (sampling parameters).
	Request domain.ChatRequest
	Tokens  TokenCounter
}

// ExtractiveModel is the id of the built-in extractive generator.
const ExtractiveModel = "memory-extractive"

// Extractive is the built-in generator used without an upstream model: it
// answers by quoting the most relevant memories and says that it does.
type Extractive struct {
	// Quote is how many memories it quotes. Default 3.
	Quote int
}

// Models returns memory-extractive.
func (Extractive) Models() []string { return []string{ExtractiveModel} }

// Generate quotes the best memories.
func (e Extractive) Generate(_ context.Context, in GenerateInput) (domain.Completion, error) {
	n := e.Quote
	if n <= 0 {
		n = 3
	}
	var b strings.Builder
	if len(in.Memories) == 0 {
		b.WriteString(extractiveNone)
	} else {
		b.WriteString(extractiveQuote + "\n")
		for i, m := range in.Memories {
			if i == n {
				break
			}
			b.WriteString(memoryLine(m.Memory))
			b.WriteByte('\n')
		}
	}
	text := strings.TrimRight(b.String(), "\n")
	tok := in.Tokens
	if tok == nil {
		tok = ApproxTokens{}
	}
	prompt := 0
	for _, m := range in.Messages {
		prompt += tok.CountTokens(m.Text()) + 4
	}
	return domain.Completion{
		Model:             in.Model,
		SystemFingerprint: "capsuled-memory-extractive",
		Choices:           []domain.Choice{{Index: 0, Content: text, FinishReason: domain.FinishStop}},
		Usage:             domain.Usage{PromptTokens: prompt, CompletionTokens: tok.CountTokens(text)},
	}, nil
}

// The openings of the extractive model's replies.
const (
	extractiveQuote = "Quoting from memory (the built-in extractive model repeats stored memories; it does not generate new text):"
	extractiveNone  = "I have no stored memory that matches this yet. (This is the built-in extractive memory model: it only quotes stored memories and does not generate new text.)"
)

// IsExtractiveReply reports whether text is a reply of the extractive model.
// Such replies only repeat stored memories, so they are not stored again
// (neither when generated nor when a client sends them back in its history).
func IsExtractiveReply(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, extractiveQuote) || t == extractiveNone
}

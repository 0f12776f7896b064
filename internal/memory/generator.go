package memory

import (
	"context"
	"strings"
	"unicode"

	"capsuled/internal/domain"
	"capsuled/internal/terms"
	"capsuled/internal/vecmath"
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
	// Embedder is the service's embedder (nil: keyword-only), which the
	// extractive model uses to find the sentence that answers.
	Embedder Embedder
}

// ExtractiveModel is the id of the built-in extractive generator.
const ExtractiveModel = "memory-extractive"

// Extractive is the built-in generator used without an upstream model: it
// answers by quoting the most relevant memories and says that it does.
type Extractive struct {
	// Quote is how many memories it quotes. Default 3.
	Quote int
}

// Fingerprint is the system_fingerprint of the extractive model's replies.
func (Extractive) Fingerprint() string { return extractiveFingerprint }

const extractiveFingerprint = "capsuled-memory-extractive"

// Models returns memory-extractive.
func (Extractive) Models() []string { return []string{ExtractiveModel} }

// Generate answers from memory without a language model: it leads with
// the stored sentence that best answers the question, then lists its
// sources, most relevant first. Questions and acknowledgements ("ok",
// "thanks") stay in the conversation but are never quoted as what is known.
func (e Extractive) Generate(ctx context.Context, in GenerateInput) (domain.Completion, error) {
	n := e.Quote
	if n <= 0 {
		n = 3
	}
	var facts []domain.Memory
	for _, m := range in.Memories {
		if isStatement(m.Memory) {
			facts = append(facts, m.Memory)
		}
	}
	var b strings.Builder
	if len(facts) == 0 {
		b.WriteString(extractiveNone)
	} else {
		b.WriteString(extractiveAnswer)
		b.WriteString(bestSentence(ctx, in.Embedder, lastUserText(in.Messages), facts))
		b.WriteString("\n\n" + extractiveSources + "\n")
		for i, m := range facts {
			if i == n {
				break
			}
			b.WriteString(memoryLine(m))
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
		SystemFingerprint: extractiveFingerprint,
		Choices:           []domain.Choice{{Index: 0, Content: text, FinishReason: domain.FinishStop}},
		Usage:             domain.Usage{PromptTokens: prompt, CompletionTokens: tok.CountTokens(text)},
	}, nil
}

// lastUserText is the text of the last user message: the question.
func lastUserText(msgs []domain.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == domain.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

// acknowledgements are replies that state nothing.
var acknowledgements = map[string]bool{
	"ok": true, "okay": true, "k": true, "thanks": true, "thank you": true, "thx": true, "got it": true, "sure": true,
	"yes": true, "no": true, "yep": true, "nope": true, "cool": true, "great": true, "nice": true, "alright": true,
	"sounds good": true, "will do": true, "noted": true, "understood": true, "hi": true, "hello": true, "bye": true,
}

// isStatement reports whether a memory states something: facts and notes
// always do; a turn does unless it is a question or an acknowledgement.
func isStatement(m domain.Memory) bool {
	if m.Kind != domain.MemoryTurn {
		return true
	}
	t := strings.TrimSpace(m.Content)
	if t == "" || IsExtractiveReply(t) {
		return false
	}
	norm := strings.ToLower(strings.TrimRight(t, ".!?… "))
	if acknowledgements[norm] {
		return false
	}
	return !isQuestion(t)
}

// isQuestion reports whether every sentence of t asks something.
func isQuestion(t string) bool {
	for _, s := range sentences(t) {
		if !strings.HasSuffix(strings.TrimSpace(s), "?") {
			return false
		}
	}
	return true
}

// sentences splits text after ., ! and ? (and line breaks).
func sentences(text string) []string {
	var out []string
	start := 0
	rs := []rune(text)
	for i, r := range rs {
		end := r == '\n' || ((r == '.' || r == '!' || r == '?') && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])))
		if end {
			if s := strings.TrimSpace(string(rs[start : i+1])); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(string(rs[start:])); s != "" {
		out = append(out, s)
	}
	return out
}

// bestSentence picks, from the statements (best first), the sentence that
// answers the question: the one most similar to it in meaning (with an
// embedder), plus the share of the question's words it holds; earlier
// statements win ties. Questions inside a statement are skipped. Without
// any candidate sentence the first statement answers.
func bestSentence(ctx context.Context, emb Embedder, question string, facts []domain.Memory) string {
	q := map[string]bool{}
	for _, w := range terms.Memory(question) {
		q[w] = true
	}
	type candidate struct {
		text  string
		score float64
	}
	var cands []candidate
	for rank, m := range facts {
		for _, s := range sentences(m.Content) {
			if strings.HasSuffix(s, "?") {
				continue
			}
			shared := 0
			for _, w := range terms.Memory(s) {
				if q[w] {
					shared++
				}
			}
			words := 0.0
			if len(q) > 0 {
				words = float64(shared) / float64(len(q))
			}
			// Rank only breaks ties.
			cands = append(cands, candidate{s, words - 1e-3*float64(rank)})
		}
	}
	if len(cands) == 0 {
		return oneLine(facts[0].Content)
	}
	if emb != nil && question != "" {
		texts := []string{question}
		for _, c := range cands {
			texts = append(texts, c.text)
		}
		if vecs, err := emb.Embed(ctx, texts); err == nil && len(vecs) == len(texts) {
			for i := range cands {
				cands[i].score += vecmath.Cosine(vecs[0], vecs[i+1])
			}
		}
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.score > best.score {
			best = c
		}
	}
	return best.text
}

// The parts of the extractive model's replies.
const (
	extractiveAnswer  = "From memory: "
	extractiveSources = "Sources (stored memories, most relevant first; the built-in extractive model quotes them and does not generate new text):"
	extractiveNone    = "I have no stored memory that matches this yet. (This is the built-in extractive memory model: it only quotes stored memories and does not generate new text.)"
	// extractiveQuote opened the replies of earlier versions, which
	// clients may send back in their history.
	extractiveQuote = "Quoting from memory (the built-in extractive model repeats stored memories; it does not generate new text):"
)

// IsExtractiveReply reports whether text is a reply of the extractive model.
// Such replies only repeat stored memories, so they are not stored again
// (neither when generated nor when a client sends them back in its history).
func IsExtractiveReply(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, extractiveQuote) || t == extractiveNone ||
		(strings.HasPrefix(t, extractiveAnswer) && strings.Contains(t, extractiveSources))
}

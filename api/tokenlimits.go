package api

import (
	"fmt"

	"capsuled/internal/chat"
	"capsuled/internal/domain"
)

// Default bounds on the tokens of one chat request, so that no request of
// at most MaxBodyBytes and 1,024 messages costs minutes of CPU. Tokens are
// counted as BERT pre-tokens (words and punctuation marks,
// chat.PreTokenCounter), a lower bound of the word-piece count usage
// reports, cheap enough to count before any other work. The memory
// operation embeds every new turn it persists (about 0.65 ms of CPU per
// token on the 2-core development machine under load, so 21 s for 32,768
// tokens in 256 turns, and 127 s for the 4 MB request that had no bound),
// so the turns of one request that it does not hold yet have a lower bound
// than a request's messages in all; a client that resends its whole
// conversation pays only for what is new.
const (
	DefaultMaxMessageTokens       = 32768
	DefaultMaxRequestTokens       = 131072
	DefaultMaxMemoryRequestTokens = 32768
)

// checkChatTokens refuses a chat request whose message holds more than the
// per-message limit of tokens (413 message_too_long) or whose messages hold
// more than perRequest in all (413 too_many_tokens).
func (s *Server) checkChatTokens(req *domain.ChatRequest, perRequest int) error {
	perMessage := s.cfg.MaxMessageTokens
	total := 0
	for i, m := range req.Messages {
		n := messageTokens(m)
		if n > perMessage {
			return &domain.Error{Kind: domain.KindTooLarge, Code: "message_too_long", Param: fmt.Sprintf("messages[%d]", i),
				Message: fmt.Sprintf("the message holds %d tokens, more than the limit of %d per message", n, perMessage)}
		}
		if total += n; total > perRequest {
			return &domain.Error{Kind: domain.KindTooLarge, Code: "too_many_tokens", Param: "messages",
				Message: fmt.Sprintf("the messages hold more than %d tokens in all, the limit per request", perRequest)}
		}
	}
	return nil
}

// checkNewTurnTokens refuses a memory chat request whose new turns (those
// the namespace does not hold yet, which it will embed) hold more than
// MaxMemoryRequestTokens (413 too_many_tokens).
func (s *Server) checkNewTurnTokens(turns []domain.Message) error {
	limit, total := s.cfg.MaxMemoryRequestTokens, 0
	for _, m := range turns {
		if total += messageTokens(m); total > limit {
			return &domain.Error{Kind: domain.KindTooLarge, Code: "too_many_tokens", Param: "messages",
				Message: fmt.Sprintf("the turns not yet remembered hold more than %d tokens, the limit per memory request (turns already remembered do not count)", limit)}
		}
	}
	return nil
}

// messageTokens counts a message's tokens: those of its text parts, name,
// tool calls (names and arguments), refusal and reasoning.
func messageTokens(m domain.Message) int {
	var count chat.PreTokenCounter
	n := count.CountTokens(m.Name) + count.CountTokens(m.Refusal) + count.CountTokens(m.Reasoning)
	for _, p := range m.Content {
		if p.Type == domain.PartText {
			n += count.CountTokens(p.Text)
		}
	}
	for _, tc := range m.ToolCalls {
		n += count.CountTokens(tc.Name) + count.CountTokens(tc.Arguments)
	}
	return n
}

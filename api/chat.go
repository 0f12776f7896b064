package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"capsuled/gen"
	"capsuled/internal/domain"
)

// Chat is what the HTTP layer needs from the svc-1 retrieval chat service.
// Nil answers 501.
type Chat interface {
	// Check applies the rules that need no generation (model id, parameters
	// the engine cannot honour); the handler calls it before a stream begins.
	Check(req *domain.ChatRequest) error
	// Complete runs one turn.
	Complete(ctx context.Context, req *domain.ChatRequest) (*domain.Completion, error)
}

// CreateChatCompletion runs one turn of svc-1. Its body is the value the
// gate's validation decoded (decodedOnce), not in.Body.
func (s *Server) CreateChatCompletion(ctx context.Context, in gen.CreateChatCompletionRequestObject) (gen.CreateChatCompletionResponseObject, error) {
	if s.chat == nil {
		return nil, notImplemented("retrieval chat")
	}
	req, err := ChatRequestFromWire(info(ctx).Value)
	if err != nil {
		return nil, err
	}
	if err := s.checkChatTokens(req, s.cfg.MaxRequestTokens); err != nil {
		return nil, err
	}
	if err := s.chat.Check(req); err != nil {
		return nil, err
	}
	if req.Stream {
		return &chatStream{
			log:  s.log,
			req:  req,
			head: &domain.Completion{ID: "chatcmpl-" + newStreamID(), Model: req.Model, Created: time.Now(), SystemFingerprint: knownFingerprint(s.chat, req.Model)},
			run:  func() (*domain.Completion, error) { return s.complete(ctx, req) },
			ctx:  ctx,
		}, nil
	}
	c, err := s.complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return gen.CreateChatCompletion200JSONResponse(CompletionToWire(c)), nil
}

func newStreamID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// knownFingerprint is the system_fingerprint a service's replies to model
// carry, when the service knows it before the reply (so the first chunk of a
// stream carries it too): services that know it say so with a Fingerprint
// method, of the service or of the model.
func knownFingerprint(svc any, model string) string {
	switch f := svc.(type) {
	case interface{ Fingerprint() string }:
		return f.Fingerprint()
	case interface{ Fingerprint(model string) string }:
		return f.Fingerprint(model)
	}
	return ""
}

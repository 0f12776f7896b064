package api

import (
	"context"

	"capsuled/gen"
)

// Chat is what the HTTP layer needs from the svc-1 retrieval chat service.
// Nil answers 501.
type Chat interface{}

// CreateChatCompletion runs one turn of svc-1.
func (s *Server) CreateChatCompletion(context.Context, gen.CreateChatCompletionRequestObject) (gen.CreateChatCompletionResponseObject, error) {
	return nil, notImplemented("retrieval chat")
}

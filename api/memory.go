package api

import (
	"context"

	"capsuled/gen"
)

// Memory is what the HTTP layer needs from the memory service. Nil answers 501.
type Memory interface{}

// CreateMemoryChatCompletion runs one memory chat turn.
func (s *Server) CreateMemoryChatCompletion(context.Context, gen.CreateMemoryChatCompletionRequestObject) (gen.CreateMemoryChatCompletionResponseObject, error) {
	return nil, notImplemented("memory chat")
}

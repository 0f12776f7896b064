package api

import (
	"context"

	"capsuled/gen"
)

// AskCapsule runs svc-1's retrieval loop over a capsule on the server.
func (s *Server) AskCapsule(ctx context.Context, req gen.AskCapsuleRequestObject) (gen.AskCapsuleResponseObject, error) {
	return nil, notImplemented("ask")
}

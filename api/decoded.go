package api

import (
	"net/http"

	"capsuled/gen"
)

// decodedOnce serves the two chat operations without the generated server's
// decoding of their bodies into gen types: their conversion
// (ChatRequestFromWire) reads the value the gate's validation decoded
// (reqInfo.Value), so a chat body, the largest the API takes, is decoded
// once. Every other operation goes through the generated strict server.
type decodedOnce struct {
	gen.ServerInterface
	s *Server
}

func (d decodedOnce) CreateChatCompletion(w http.ResponseWriter, r *http.Request) {
	resp, err := d.s.CreateChatCompletion(r.Context(), gen.CreateChatCompletionRequestObject{})
	if err == nil {
		err = resp.VisitCreateChatCompletionResponse(w)
	}
	if err != nil {
		writeError(w, r, d.s.log, err)
	}
}

func (d decodedOnce) CreateMemoryChatCompletion(w http.ResponseWriter, r *http.Request, params gen.CreateMemoryChatCompletionParams) {
	resp, err := d.s.CreateMemoryChatCompletion(r.Context(), gen.CreateMemoryChatCompletionRequestObject{Params: params})
	if err == nil {
		err = resp.VisitCreateMemoryChatCompletionResponse(w)
	}
	if err != nil {
		writeError(w, r, d.s.log, err)
	}
}

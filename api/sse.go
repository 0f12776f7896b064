package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"capsuled/gen"
	"capsuled/internal/domain"
)

// chatStream is the text/event-stream reply of a chat completion. It sends
// the role chunk of every choice at once (unless usage is sent on every
// chunk, which needs the prompt count first), then runs the turn, then the
// rest of the chunks; an error after the stream began is one error event.
// Every event is flushed as it is written; the stream always ends with
// "data: [DONE]".
type chatStream struct {
	log  *slog.Logger
	req  *domain.ChatRequest
	head *domain.Completion // id, model and created of every chunk
	run  func() (*domain.Completion, error)
	ctx  context.Context //nolint:containedctx // the strict handler's Visit has no context
	// last, when set, amends the last chunk before it is sent (the memory
	// operation puts its report there).
	last func(*gen.ChatCompletionChunk)
}

func (cs *chatStream) VisitCreateChatCompletionResponse(w http.ResponseWriter) error {
	return cs.write(w)
}

// write sends the whole stream.
func (cs *chatStream) write(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	done := func() error {
		_, err := w.Write([]byte("data: [DONE]\n\n"))
		if flusher != nil {
			flusher.Flush()
		}
		return err
	}
	early := !cs.req.ContinuousUsage
	if early {
		for i := range max(cs.req.N, 1) {
			if err := send(RoleChunk(cs.head, i)); err != nil {
				return err
			}
		}
	}
	c, err := cs.run()
	if err != nil {
		_, body, _ := toWire(cs.ctx, cs.log, err)
		if err := send(body); err != nil {
			return err
		}
		return done()
	}
	c.ID, c.Model, c.Created = cs.head.ID, cs.head.Model, cs.head.Created
	chunks := CompletionChunks(c, ChunkOptions{IncludeUsage: cs.req.IncludeUsage, ContinuousUsage: cs.req.ContinuousUsage, SkipRole: early})
	if n := len(chunks); n > 0 && cs.last != nil {
		cs.last(&chunks[n-1])
	}
	for _, ch := range chunks {
		if err := send(ch); err != nil {
			return err
		}
	}
	return done()
}

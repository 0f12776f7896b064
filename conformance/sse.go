package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

func init() {
	// kin-openapi has no decoder for server-sent events: decode a stream into
	// the array of its JSON events, which the spec's stream schema describes.
	openapi3filter.RegisterBodyDecoder("text/event-stream", decodeEventStream)
}

// decodeEventStream reads an SSE body: each event's data must be JSON, and the
// stream must end with the literal event [DONE], which is not an item.
func decodeEventStream(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	events, err := ParseEventStream(r)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(events))
	for i, e := range events {
		var v any
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			return nil, fmt.Errorf("event %d is not JSON: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseEventStream returns the data of each event of an SSE stream, without
// the final [DONE], and fails when the stream does not end with [DONE].
func ParseEventStream(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var (
		events []string
		data   []string
		done   bool
	)
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		e := strings.Join(data, "\n")
		data = nil
		if done {
			return fmt.Errorf("event after [DONE]")
		}
		if e == "[DONE]" {
			done = true
			return nil
		}
		events = append(events, e)
		return nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, ":"): // comment
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "id:"), strings.HasPrefix(line, "retry:"):
		default:
			return nil, fmt.Errorf("not an SSE line: %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("the stream does not end with data: [DONE]")
	}
	return events, nil
}

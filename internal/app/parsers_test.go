package app_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"capsuled/internal/app"
)

// An unknown parser name stops the server at start-up and lists the known
// ones.
func TestUnknownParserFailsAtStartup(t *testing.T) {
	t.Parallel()
	for _, c := range []app.ChatConfig{
		{Engine: "upstream", UpstreamURL: "http://127.0.0.1:1/v1", UpstreamModel: "m", UpstreamToolParser: "hermes3"},
		{Engine: "upstream", UpstreamURL: "http://127.0.0.1:1/v1", UpstreamModel: "m", UpstreamReasoningParser: "think"},
	} {
		a, err := app.New(context.Background(), app.Config{DataDir: t.TempDir(), Chat: c}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			a.Close()
			t.Fatalf("%+v: started", c)
		}
		if !strings.Contains(err.Error(), "known: ") || !strings.Contains(err.Error(), "parser") {
			t.Fatalf("%+v: %v, want the known parsers listed", c, err)
		}
	}
}

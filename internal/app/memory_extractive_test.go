package app_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/app"
)

// TestMemoryExtractiveAnswers: without an LLM, memory chat answers with the
// stored sentence that fits the question (the real embedding model finds
// it: "for a living" shares no word with "marine biologist"), then its
// sources; a question the user asked earlier ("Where do I live?") and an
// acknowledgement stay in the conversation but are never quoted as facts.
func TestMemoryExtractiveAnswers(t *testing.T) {
	t.Parallel()
	onnx := os.Getenv("CAPSULED_ONNX_DIR")
	if onnx == "" || os.Getenv("CAPSULED_ORT_LIB") == "" {
		t.Skip("needs the embedding model (CAPSULED_ONNX_DIR, CAPSULED_ORT_LIB; run .ci/fetch-model.sh)")
	}
	base, admin := serveWithAdmin(t, app.Config{Capsules: app.CapsulesConfig{ONNXDir: onnx}})
	client := openai.NewClient(option.WithBaseURL(base+"memory/"), option.WithAPIKey(admin),
		option.WithMaxRetries(0), option.WithQuery("namespace", "first-hour"))
	ctx := context.Background()
	say := func(text string) string {
		t.Helper()
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "svc-1",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c.Choices[0].Message.Content
	}
	for _, s := range []string{"My dog is called Biscuit.", "I live in Lisbon.", "Where do I live?", "I work as a marine biologist.", "thanks"} {
		say(s)
	}
	reply := say("What do I do for a living?")
	first, _, _ := strings.Cut(reply, "\n")
	if first != "From memory: I work as a marine biologist." {
		t.Fatalf("the reply does not lead with the answer:\n%s", reply)
	}
	for _, never := range []string{"Where do I live?", "thanks", "What do I do for a living?"} {
		if strings.Contains(reply, never) {
			t.Fatalf("the reply quotes %q as a fact:\n%s", never, reply)
		}
	}
}

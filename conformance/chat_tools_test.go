package conformance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// toolCase is one file of the built-in engine's testdata/tools: a system
// prompt, maybe full tool definitions, and the client tool (with its
// argument names) each of svc-1's roles must be played by.
type toolCase struct {
	About  string `json:"about"`
	System string `json:"system"`
	Tools  []struct {
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Want     map[string]struct{ Name, Query, Limit, ID, IDs string } `json:"want"`
	Unmapped []string                                                `json:"unmapped"`
}

// TestChatSDKClientTools runs svc-1's loop through the HTTP API with the
// OpenAI Go SDK for each prompt and tool set of the engine's testdata/tools
// (the documented names, tools renamed in the system prompt in several
// styles, full definitions in tools): every call is one of the client's
// tools with the arguments it declares, the loop ends with the client's
// report tool, and a role no tool plays is said in the reasoning.
func TestChatSDKClientTools(t *testing.T) {
	files, err := filepath.Glob("../internal/engine/builtin/testdata/tools/*.json")
	if err != nil || len(files) < 5 {
		t.Fatalf("tool cases: %v %v", files, err)
	}
	client := sdkClient(t)
	ctx := context.Background()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var tc toolCase
			if err := json.Unmarshal(raw, &tc); err != nil {
				t.Fatal(err)
			}
			tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "dummy"})}
			if len(tc.Tools) > 0 {
				tools = nil
				for _, d := range tc.Tools {
					tools = append(tools, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
						Name: d.Function.Name, Description: openai.String(d.Function.Description), Parameters: d.Function.Parameters}))
				}
			}
			role := map[string]string{}
			for r, w := range tc.Want {
				role[w.Name] = r
			}
			params := openai.ChatCompletionNewParams{Model: "svc-1", Tools: tools, Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage(tc.System), openai.UserMessage("Who directed the film Ed Wood, and where was he born?")}}
			reported := false
			for turn := 0; turn < 8 && !reported; turn++ {
				comp, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatalf("%s: %v", tc.About, err)
				}
				msg := comp.Choices[0].Message
				if turn == 0 && len(tc.Unmapped) > 0 && !strings.Contains(msg.Content, "None of the tools offered plays the role of") {
					t.Errorf("the reasoning should name the unmapped role: %s", msg.Content)
				}
				if len(msg.ToolCalls) == 0 {
					t.Fatalf("turn %d: no tool calls: %s", turn, msg.Content)
				}
				params.Messages = append(params.Messages, msg.ToParam())
				for _, call := range msg.ToolCalls {
					r, ok := role[call.Function.Name]
					if !ok {
						t.Fatalf("called %q, not one of the client's tools", call.Function.Name)
					}
					var a map[string]any
					if err := json.Unmarshal([]byte(call.Function.Arguments), &a); err != nil {
						t.Fatal(err)
					}
					w := tc.Want[r]
					result := `{"ok":true}`
					switch r {
					case "search", "text_search":
						q, ok := a[w.Query].(string)
						if !ok || w.Limit != "" && a[w.Limit] == nil {
							t.Fatalf("%s arguments %s: want %q and %q", call.Function.Name, call.Function.Arguments, w.Query, w.Limit)
						}
						result = sdkSearch(q)
					case "read":
						if _, ok := a[w.ID].(string); !ok {
							t.Fatalf("%s arguments %s: want %q", call.Function.Name, call.Function.Arguments, w.ID)
						}
						result = sdkCorpus[1]["content"]
					case "report_helpful_ids":
						ids, ok := a[w.IDs].([]any)
						if !ok || len(ids) == 0 {
							t.Fatalf("%s arguments %s: want an array %q", call.Function.Name, call.Function.Arguments, w.IDs)
						}
						reported = true
					}
					params.Messages = append(params.Messages, openai.ToolMessage(result, call.ID))
				}
			}
			if !reported {
				t.Fatal("the loop never called the client's report tool")
			}
		})
	}
}

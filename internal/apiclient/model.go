package apiclient

import (
	"context"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/internal/agent"
	"capsuled/internal/domain"
)

// SDKModel answers turns with svc-1 at the server url over HTTP, through
// the official OpenAI Go SDK, as any client of the interface would.
func SDKModel(url, key string) agent.Model {
	client := openai.NewClient(option.WithBaseURL(strings.TrimRight(url, "/")+"/v1/"), option.WithAPIKey(key))
	return agent.ModelFunc(func(ctx context.Context, msgs []domain.Message) (domain.Choice, error) {
		params := openai.ChatCompletionNewParams{
			Model:    "svc-1",
			Messages: toSDK(msgs),
			Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "dummy"})},
		}
		comp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return domain.Choice{}, err
		}
		if len(comp.Choices) == 0 {
			return domain.Choice{}, errors.New("svc-1 replied with no choice")
		}
		m := comp.Choices[0]
		out := domain.Choice{Content: m.Message.Content, FinishReason: m.FinishReason}
		for _, tc := range m.Message.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, domain.ToolCall{ID: tc.ID, Type: "function", Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return out, nil
	})
}

func toSDK(msgs []domain.Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case domain.RoleSystem:
			out = append(out, openai.SystemMessage(m.Text()))
		case domain.RoleUser:
			out = append(out, openai.UserMessage(m.Text()))
		case domain.RoleTool:
			out = append(out, openai.ToolMessage(m.Text(), m.ToolCallID))
		case domain.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if t := m.Text(); t != "" {
				a.Content.OfString = openai.String(t)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
				}})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}

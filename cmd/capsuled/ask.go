package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"capsuled/gen"
	"capsuled/internal/agent"
	"capsuled/internal/chat"
	"capsuled/internal/domain"
	"capsuled/internal/engine/builtin"
)

// runAsk runs the svc-1 retrieval loop over a capsule: search is the capsule
// query in hybrid mode, text_search in keyword mode, read the item's text.
func runAsk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ask", stderr)
	var cf clientFlags
	cf.register(fs)
	engine := fs.String("engine", "server", "who answers the turns: server (svc-1 on the server over HTTP, whatever engine it runs: builtin or upstream) or builtin (the built-in policy in this process)")
	trace := fs.Bool("trace", false, "print every turn")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	turns := fs.Int("max-turns", 8, "turn limit")
	if err := parse(fs, reorder(args)); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New(`usage: capsuled ask CAPSULE "question" [--engine server|builtin] [--trace] [--json]`)
	}
	capsule, question := fs.Arg(0), fs.Arg(1)
	c, err := cf.client()
	if err != nil {
		return err
	}
	var model agent.Model
	switch *engine {
	case "server", "upstream":
		model = sdkModel(cf.url, cf.key)
	case "builtin":
		svc, err := chat.New(chat.Config{Engine: builtin.New(builtin.Config{}), Counter: chat.PreTokenCounter{}})
		if err != nil {
			return err
		}
		model = agent.InProcess(svc)
	default:
		return fmt.Errorf("--engine %q: want server or builtin", *engine)
	}
	res, err := agent.Run(ctx, model, &capsuleBackend{c: c, capsule: capsule}, question, agent.Config{MaxTurns: *turns})
	if err != nil {
		return err
	}
	if *asJSON {
		type item struct {
			ID      string `json:"id"`
			Title   string `json:"title,omitempty"`
			Content string `json:"content"`
		}
		out := struct {
			*agent.Result
			Items []item `json:"items"`
		}{Result: res}
		for _, id := range res.IDs {
			h := res.Evidence[id]
			out.Items = append(out.Items, item{ID: id, Title: h.Title, Content: h.Text})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if *trace {
		for _, s := range res.Trace {
			fmt.Fprintf(stdout, "── turn %d (%s, %v)\n", s.Turn, s.Finish, s.Duration.Round(1e6))
			if c := strings.TrimSpace(s.Content); c != "" {
				fmt.Fprintln(stdout, indent(c))
			}
			for _, tc := range s.ToolCalls {
				fmt.Fprintf(stdout, "  → %s %s", tc.Name, tc.Arguments)
				if tc.Error != "" {
					fmt.Fprintf(stdout, "  error: %s", tc.Error)
				} else if len(tc.ResultIDs) > 0 {
					fmt.Fprintf(stdout, "  (%d results)", len(tc.ResultIDs))
				}
				fmt.Fprintln(stdout)
			}
		}
		fmt.Fprintln(stdout)
	}
	if !res.Reported {
		fmt.Fprintf(stderr, "the loop ended after %d turns without report_helpful_ids\n", res.Turns)
	}
	for i, id := range res.IDs {
		h := res.Evidence[id]
		snippet := strings.Join(strings.Fields(h.Text), " ")
		if len(snippet) > 160 {
			snippet = snippet[:160] + "…"
		}
		fmt.Fprintf(stdout, "%2d. %s  %s\n", i+1, id, snippet)
	}
	fmt.Fprintf(stdout, "(%d turns, %d tool calls)\n", res.Turns, res.ToolCalls)
	return nil
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// reorder moves flags before positional arguments so that
// `ask CAPSULE "q" --trace` works with the flag package.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue(name) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func takesValue(name string) bool {
	switch name {
	case "trace", "json":
		return false
	}
	return true
}

// capsuleBackend runs the tools against a capsule's query API.
type capsuleBackend struct {
	c       *gen.ClientWithResponses
	capsule string
}

func (b *capsuleBackend) query(ctx context.Context, q string, limit int, mode gen.WishlistMode) ([]agent.Hit, error) {
	limit = max(1, min(limit, 100))
	m := mode
	resp, err := b.c.QueryCapsuleWithResponse(ctx, b.capsule, gen.QueryCapsuleJSONRequestBody{Query: q, Limit: &limit, Wishlist: &gen.Wishlist{Mode: &m}})
	if err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, errorOf(resp.StatusCode(), resp.Body)
	}
	var hits []agent.Hit
	seen := map[string]int{}
	for _, r := range *resp.JSON200 {
		if i, ok := seen[r.ItemId]; ok { // one hit per item: its chunks joined
			hits[i].Text += "\n" + r.Content
			continue
		}
		seen[r.ItemId] = len(hits)
		hits = append(hits, agent.Hit{ID: r.ItemId, Title: r.FileName, Text: r.Content, Score: float64(r.Score)})
	}
	return hits, nil
}

func (b *capsuleBackend) Search(ctx context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.query(ctx, q, limit, gen.Hybrid)
}

func (b *capsuleBackend) TextSearch(ctx context.Context, q string, limit int) ([]agent.Hit, error) {
	return b.query(ctx, q, limit, gen.Keyword)
}

func (b *capsuleBackend) Read(ctx context.Context, id string) (string, error) {
	resp, err := b.c.GetItemTextWithResponse(ctx, b.capsule, id)
	if err != nil {
		return "", err
	}
	if resp.JSON200 == nil {
		return "", errorOf(resp.StatusCode(), resp.Body)
	}
	return resp.JSON200.Text, nil
}

// sdkModel answers turns with svc-1 over HTTP, through the official OpenAI
// Go SDK, as any client of the interface would.
func sdkModel(url, key string) agent.Model {
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

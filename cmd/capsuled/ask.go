package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"capsuled/internal/agent"
	"capsuled/internal/apiclient"
	"capsuled/internal/chat"
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
	if err := parse(fs, args); err != nil {
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
		model = apiclient.SDKModel(cf.url, cf.key)
	case "builtin":
		svc, err := chat.New(chat.Config{Engine: builtin.New(builtin.Config{}), Counter: chat.PreTokenCounter{}})
		if err != nil {
			return err
		}
		model = agent.InProcess(svc)
	default:
		return fmt.Errorf("--engine %q: want server or builtin", *engine)
	}
	res, err := agent.Run(ctx, model, &apiclient.Backend{Client: c, Capsule: capsule}, question, agent.Config{MaxTurns: *turns})
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

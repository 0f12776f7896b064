package app

import (
	"context"
	"flag"

	"capsuled/api"
)

// ChatConfig configures the svc-1 engine: builtin or upstream.
type ChatConfig struct{}

// RegisterFlags adds the svc-1 settings to a serve command's flags.
func (c *ChatConfig) RegisterFlags(fs *flag.FlagSet) {}

// newChat builds the svc-1 chat service (nil: the operation answers 501).
func (a *App) newChat(ctx context.Context) (api.Chat, error) { return nil, nil }

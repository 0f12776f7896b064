package app

import (
	"context"
	"flag"

	"capsuled/api"
)

// CapsulesConfig configures capsules: ingestion, the embedder and retrieval.
type CapsulesConfig struct{}

// RegisterFlags adds the capsule settings to a serve command's flags.
func (c *CapsulesConfig) RegisterFlags(fs *flag.FlagSet) {}

// newCapsules builds the capsule service (nil: the operations answer 501).
func (a *App) newCapsules(ctx context.Context) (api.Capsules, error) { return nil, nil }

package app

import (
	"errors"

	"capsuled/internal/chat"
)

// newUpstream builds the upstream engine.
func newUpstream(c ChatConfig) (chat.Engine, error) {
	return nil, errors.New("engine upstream: not part of this build yet; use --engine builtin")
}

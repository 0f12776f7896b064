package app

import (
	"capsuled/internal/chat"
	"capsuled/internal/engine/upstream"
)

// newUpstream builds the upstream engine from the --upstream-* settings.
func newUpstream(c ChatConfig) (chat.Engine, error) {
	return upstream.New(upstream.Config{URL: c.UpstreamURL, Model: c.UpstreamModel, Key: c.UpstreamKey, Timeout: c.UpstreamTimeout,
		ToolParser: c.UpstreamToolParser, ReasoningParser: c.UpstreamReasoningParser})
}

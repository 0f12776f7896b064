package agent_test

import "capsuled/internal/domain"

type (
	domainMessage = domain.Message
	domainChoice  = domain.Choice
)

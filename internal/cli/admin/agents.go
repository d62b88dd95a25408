package admin

import "errors"

// Errors of the agents run from agent files.
var (
	// ErrAgentActive means an active credential already carries the agent's name.
	ErrAgentActive = errors.New("the agent is already active")
	// ErrWideGrant means an agent file grants channels of every team, which is minted only
	// when told.
	ErrWideGrant = errors.New("the agent file grants every channel")
)

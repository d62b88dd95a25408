package delivery

import "errors"

// Errors of Start and Config.Validate.
var (
	// ErrInvalidConfig: a Config field is missing or out of range; the message names it.
	ErrInvalidConfig = errors.New("invalid delivery config")
)

// Errors of a running Service.
var (
	// ErrUnhealthy: one or more loops are down; the message names each and its last error.
	ErrUnhealthy = errors.New("durable delivery is degraded")
	// ErrUnknownLoop: StopLoop was given a name that is not one of the Loop constants.
	ErrUnknownLoop = errors.New("no delivery loop by that name")
)

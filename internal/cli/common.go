package cli

import (
	"context"
	"time"
)

// newTimeoutContext is the context for shutdown work after the command's own context ended.
func newTimeoutContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

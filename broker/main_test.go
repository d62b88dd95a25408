package broker

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: a broker, a pipe pump, a
// client connection.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

package cli

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/cotal-go/cotal/internal/mcpserver"
)

// cotal mcp must outlive a mesh outage of any length: the runtime that started it cannot start
// it again within its session. The restart itself is TestMCPServerRecoversFromAMeshRestart.
func TestMCPEndpointReconnectsWithoutABound(t *testing.T) {
	o := mcpEndpointOptions("cotal://127.0.0.1:4222/main", []byte("creds"), []string{"general"},
		mcpserver.NewInbox(0), slog.New(slog.DiscardHandler))
	if !o.ReconnectForever {
		t.Error("cotal mcp's Endpoint gives up reconnecting after Options.MaxReconnects; want ReconnectForever")
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the options are invalid: %v", err)
	}
	if o.Handler == nil || !slices.Equal(o.Channels, []string{"general"}) {
		t.Errorf("the options lack the inbox Handler or the channels: %+v", o)
	}
}

package mcpserver_test

import (
	"fmt"
	"testing"

	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space/spacetest"
)

// BenchmarkMCPDMRoundTrip measures a DM from one MCP client's cotal_dm call (by name) to the
// other client's cotal_inbox returning it, both servers in process over the SDK's in-memory
// transport, on one embedded mesh.
func BenchmarkMCPDMRoundTrip(b *testing.B) {
	m := spacetest.New(b)
	general := []string{"general"}
	alice := newAgent(b, m, "alice", provisioner.Grants{Subscribe: general, AllowPublish: general})
	bob := newAgent(b, m, "bob", provisioner.Grants{Subscribe: general, AllowPublish: general})
	n := 0
	for b.Loop() {
		n++
		want := fmt.Sprintf("ping %d", n)
		alice.ok(b, "cotal_dm", map[string]any{"to": "bob", "text": want}, nil)
		bob.waitMessage(b, func(m mcpserver.InboxMessage) bool { return m.Text == want })
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n)/1000, "ms/roundtrip")
}

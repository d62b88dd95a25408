package cli

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/space/spacetest"
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

func TestMCPJoinsTheSubscribeChannelsAndPostsOnTheFirstByDefault(t *testing.T) {
	m := spacetest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	minted, err := admin.Mint(ctx, m, admin.MintSpec{Space: "main", Name: "alice", Profile: "agent",
		Subscribe: []string{"team.b", "general"}, AllowSubscribe: []string{"general", "ops", "team.>"}})
	if err != nil {
		t.Fatal(err)
	}
	fromMint, err := endpoint.ParseCredential(minted.Creds)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cred endpoint.Credential
		want []string
	}{
		{"a minted credential's --subscribe channels, in order, and not the rest of its read ACL", fromMint,
			[]string{"team.b", "general"}},
		{"a credential without subscribe tags falls back to the concrete channels of its read ACL",
			endpoint.Credential{ReadACL: []string{"team.>", "ops", "general"}}, []string{"ops", "general"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bootChannels(tc.cred); !slices.Equal(got, tc.want) {
				t.Errorf("cotal mcp joins %v, want %v (the first is cotal_send's default)", got, tc.want)
			}
		})
	}
}

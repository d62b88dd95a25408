package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/space"
)

// TestStatusShowsTheClusterOnAClusterNodeOnly: the human form of `cotal status` lists the
// nodes, the meta leader and each stream's replicas in cluster mode, and none of it alone.
func TestStatusShowsTheClusterOnAClusterNodeOnly(t *testing.T) {
	stream := space.StreamStatus{Name: "CHAT_main", Messages: 4, LastSeq: 4}
	alone := &space.Status{Dir: "/d", Spaces: []space.SpaceStatus{{Name: "main", Streams: []space.StreamStatus{stream}}}}
	clustered := *alone
	stream.Replicas, stream.Leader = 3, "node0"
	stream.Followers = []space.Peer{{Name: "node1", Current: true}, {Name: "node2", Offline: true, Active: 4 * time.Second}}
	clustered.Spaces = []space.SpaceStatus{{Name: "main", Streams: []space.StreamStatus{stream}}}
	clustered.Cluster = &space.ClusterStatus{Name: "prod", Node: "node0", MetaLeader: "node1", Nodes: []space.Peer{
		{Name: "node0", Current: true, Connected: true}, {Name: "node1", Current: true, Connected: true, Active: 300 * time.Millisecond},
		{Name: "node2", Offline: true, Active: 4 * time.Second}},
		Backstops: []space.BackstopHolder{{Space: "main", Node: "node1"}, {Space: "ops", Opening: true},
			{Space: "qa"}, {Space: "x", Error: "timeout"}}}
	unread := *alone
	unread.Spaces = []space.SpaceStatus{{Name: "main", Streams: []space.StreamStatus{{Name: "CHAT_main", Error: "stream CHAT_main: timeout"}},
		Members: []space.MemberBacklog{{Name: "bob", DM: space.Backlog{Error: "consumer dm_x on DM_main: timeout"}}}}}
	for _, tc := range []struct {
		name      string
		st        *space.Status
		want, not []string
	}{
		{"a mesh alone shows no cluster and no replicas", alone, []string{"CHAT_main"}, []string{"cluster", "REPLICAS", "leader"}},
		{"a cluster node shows its nodes, the meta leader and each stream's replicas", &clustered, []string{
			"cluster prod, this node node0, meta leader node1",
			"node1  current  300ms ago", "node2  OFFLINE  4s ago",
			"R3 leader node0, node1 current, node2 OFFLINE",
			"space main backstop: runs on node1",
			"space ops backstop: lease not read yet",
			"space qa backstop: NO NODE",
			"space x backstop: lease unreadable (timeout)",
		}, nil},
		{"a stream or consumer that could not be read shows UNREAD", &unread, []string{"CHAT_main  UNREAD", "bob     UNREAD"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := printStatus(&out, tc.st, ""); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, out.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out.String(), n) {
					t.Errorf("status shows %q:\n%s", n, out.String())
				}
			}
		})
	}
}

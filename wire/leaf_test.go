package wire

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryStorageSubjectIsEitherCrossingOrLocal checks that each subject the agent account
// hands to storage is decided for a leaf link: the ones that cross are chat and DMs, every
// other one is denied both ways, and nothing crosses that nats-server would deny anyway.
func TestEveryStorageSubjectIsEitherCrossingOrLocal(t *testing.T) {
	n := NewNames("main")
	crossing, local := n.LeafSubjects(), n.LeafLocalSubjects()
	for _, s := range n.StorageServiceSubjects() {
		if slices.Contains(crossing, s) == slices.Contains(local, s) {
			t.Errorf("%s is crossing %t and local %t; want exactly one", s, slices.Contains(crossing, s), slices.Contains(local, s))
		}
	}
	for _, s := range []string{"cotal.main.svc.>", "cotal.main.ctl.>", "$KV.cotal_presence_main.>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>"} {
		if !slices.Contains(local, s) {
			t.Errorf("%s may cross a leaf link", s)
		}
	}
	for _, s := range crossing {
		if strings.HasPrefix(s, "$") {
			t.Errorf("%s crosses, but nats-server denies $ subjects of JetStream on leaf links", s)
		}
	}
	if want := []string{"cotal.main.chat.>", "cotal.main.inst.>", "cotal.main.leaf.presence.*"}; !slices.Equal(crossing, want) {
		t.Errorf("LeafSubjects() = %v, want %v", crossing, want)
	}
}

func TestLeafGrantsAreTheCrossingSubjectsOnly(t *testing.T) {
	n := NewNames("main")
	p := LeafPermissions(n)
	if !slices.Equal(p.Pub.Allow, n.LeafSubjects()) || !slices.Equal(p.Sub.Allow, n.LeafSubjects()) || len(p.Pub.Deny)+len(p.Sub.Deny) > 0 {
		t.Errorf("LeafPermissions = %+v", p)
	}
	r := LeafRelayPermissions(n)
	want := []string{"$KV.cotal_presence_main.*", "cotal.main.leaf.presence.*"}
	if !slices.Equal(r.Pub.Allow, want) || !slices.Equal(r.Sub.Allow, want) {
		t.Errorf("LeafRelayPermissions = %+v, want %v both ways", r, want)
	}
	if got := n.LeafPresenceSubject("U.A B"); got != "cotal.main.leaf.presence.U_A_B" {
		t.Errorf("LeafPresenceSubject sanitizes to %s", got)
	}
}

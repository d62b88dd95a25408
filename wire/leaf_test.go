package wire

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryStorageSubjectIsEitherCrossingOrLocal checks that each subject the agent account
// hands to storage is denied on a leaf link both ways, that only the relays' own subjects
// cross, and that nothing crosses that nats-server would deny anyway.
func TestEveryStorageSubjectIsEitherCrossingOrLocal(t *testing.T) {
	n := NewNames("main")
	const leaf = "ULEAF"
	p := LeafPermissions(n, leaf)
	crossing, local := append(p.Pub.Allow, p.Sub.Allow...), n.LeafLocalSubjects()
	for _, s := range n.StorageServiceSubjects() {
		if slices.Contains(crossing, s) || !slices.Contains(local, s) {
			t.Errorf("%s is crossing %t and local %t; want local only", s, slices.Contains(crossing, s), slices.Contains(local, s))
		}
	}
	for _, s := range []string{"cotal.main.chat.>", "cotal.main.inst.>", "cotal.main.svc.>", "cotal.main.ctl.>",
		"$KV.cotal_presence_main.>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>"} {
		if !slices.Contains(local, s) {
			t.Errorf("%s may cross a leaf link", s)
		}
	}
	for _, s := range crossing {
		if !strings.HasPrefix(s, "cotal.main.leaf.") {
			t.Errorf("%s crosses, but only the relays' subjects may", s)
		}
	}
}

// TestALeafSendsUpAsItselfAndHearsOnlyTheHub: a leaf credential publishes and receives its
// own up and down subjects only.
func TestALeafSendsUpAsItselfAndHearsOnlyTheHub(t *testing.T) {
	n := NewNames("main")
	p := LeafPermissions(n, "ULEAF")
	want := []string{"cotal.main.leaf.up.ULEAF.>", "cotal.main.leaf.down.ULEAF.>"}
	if !slices.Equal(p.Pub.Allow, want) || !slices.Equal(p.Sub.Allow, want) {
		t.Errorf("LeafPermissions = %+v, want %v both ways", p, want)
	}
	if len(p.Pub.Deny)+len(p.Sub.Deny) > 0 {
		t.Errorf("LeafPermissions denies %+v", p)
	}
	r := LeafRelayPermissions(n)
	want = []string{"cotal.main.chat.>", "cotal.main.inst.>", "$KV.cotal_presence_main.*", "cotal.main.leaf.>"}
	if !slices.Equal(r.Pub.Allow, want) || !slices.Equal(r.Sub.Allow, want) {
		t.Errorf("LeafRelayPermissions = %+v, want %v both ways", r, want)
	}
}

func TestLeafSubjectsMapBothWays(t *testing.T) {
	n := NewNames("main")
	routes := []LeafRoute{{Dir: LeafUp, Leaf: "ULEAF"}, {Dir: LeafDown, Leaf: "UOTHER"}}
	for _, r := range routes {
		for _, local := range []string{"cotal.main.chat.UA.general", "cotal.main.chat.UA.team.secret", "cotal.main.inst.UB.UA",
			"$KV.cotal_presence_main.UA"} {
			leaf := n.LeafSubject(r, local)
			if !strings.HasPrefix(leaf, "cotal.main.leaf."+r.Dir+"."+r.Leaf+".") {
				t.Errorf("LeafSubject(%v, %s) = %s", r, local, leaf)
			}
			if back, local2, err := n.LocalSubject(leaf); err != nil || back != r || local2 != local {
				t.Errorf("LocalSubject(%s) = %v, %s, %v; want %v, %s", leaf, back, local2, err, r, local)
			}
		}
	}
	if got := n.LeafSubject(routes[0], "$KV.cotal_presence_main.UA"); got != "cotal.main.leaf.up.ULEAF.presence.UA" {
		t.Errorf("a presence write crosses as %s", got)
	}
	for _, bad := range []string{"cotal.main.leaf.up.UL.svc.r.UA", "cotal.other.leaf.up.UL.chat.UA.x", "cotal.main.leaf.chat.UA.general",
		"cotal.main.leaf.sideways.UL.chat.UA.x", "cotal.main.leaf.up..chat.UA.x", "cotal.main.leaf.up.UL.presence.UA.x",
		"cotal.main.leaf.up.UL.chat", "cotal.main.chat.UA.general", "cotal.main.leaf.", ""} {
		if r, got, err := n.LocalSubject(bad); err == nil {
			t.Errorf("LocalSubject(%q) = %v, %q, want an error", bad, r, got)
		}
	}
}

func TestCheckLeafCopy(t *testing.T) {
	const alice, bob = "UALICE", "UBOB"
	n := NewNames("main")
	chat := `{"id":"1","ts":1,"space":"main","from":{"id":"UALICE","name":"alice"},"channel":"general","parts":[{"kind":"text","text":"hi"}]}`
	dm := `{"id":"2","ts":1,"space":"main","from":{"id":"UALICE","name":"alice"},"to":"UBOB","parts":[{"kind":"text","text":"hi"}]}`
	task := `{"id":"3","ts":1,"space":"main","from":{"id":"UALICE","name":"alice"},"toService":"reviewer","parts":[{"kind":"text","text":"hi"}]}`
	cases := []struct {
		name, subject, payload string
		ok                     bool
	}{
		{"a post on its own subject", n.ChatSubject(alice, "general"), chat, true},
		{"a DM to its own target", n.InstSubject(bob, alice), dm, true},
		{"a PubAck", n.ChatSubject(alice, "general"), `{"stream":"CHAT_main","seq":7}`, false},
		{"a post on another sender's subject", n.ChatSubject(bob, "general"), chat, false},
		{"a post on another channel", n.ChatSubject(alice, "team.secret"), chat, false},
		{"a DM on another target", n.InstSubject("UCAROL", alice), dm, false},
		{"a DM payload on a chat subject", n.ChatSubject(alice, "general"), dm, false},
		{"an anycast", n.SvcSubject("reviewer", alice), task, false},
		{"a relayed subject", n.LeafSubject(LeafRoute{Dir: LeafUp, Leaf: "ULEAF"}, n.ChatSubject(alice, "general")), chat, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := CheckLeafCopy(c.subject, []byte(c.payload))
			if (err == nil) != c.ok {
				t.Fatalf("CheckLeafCopy = %v, want ok %t", err, c.ok)
			}
			if _, ok := ReasonOf(err); err != nil && !ok {
				t.Errorf("%v is no anomaly", err)
			}
		})
	}
}

func FuzzLocalSubject(f *testing.F) {
	n := NewNames("main")
	for _, s := range []string{"cotal.main.leaf.up.UL.chat.UA.general", "cotal.main.leaf.down.UL.inst.UB.UA",
		"cotal.main.leaf.down.UL.presence.UA", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, local, err := n.LocalSubject(s)
		if err != nil {
			return
		}
		if n.LeafSubject(r, local) != s {
			t.Fatalf("LeafSubject(LocalSubject(%q)) = %q", s, n.LeafSubject(r, local))
		}
	})
}

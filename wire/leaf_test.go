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
	crossing, local := n.LeafSubjects(), n.LeafLocalSubjects()
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
	if want := []string{"cotal.main.leaf.chat.>", "cotal.main.leaf.inst.>", "cotal.main.leaf.presence.*"}; !slices.Equal(crossing, want) {
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
	want := []string{"cotal.main.chat.>", "cotal.main.inst.>", "$KV.cotal_presence_main.*",
		"cotal.main.leaf.chat.>", "cotal.main.leaf.inst.>", "cotal.main.leaf.presence.*"}
	if !slices.Equal(r.Pub.Allow, want) || !slices.Equal(r.Sub.Allow, want) {
		t.Errorf("LeafRelayPermissions = %+v, want %v both ways", r, want)
	}
	if got := n.LeafPresenceSubject("U.A B"); got != "cotal.main.leaf.presence.U_A_B" {
		t.Errorf("LeafPresenceSubject sanitizes to %s", got)
	}
}

func TestLeafSubjectsMapBothWays(t *testing.T) {
	n := NewNames("main")
	for _, local := range []string{"cotal.main.chat.UA.general", "cotal.main.chat.UA.team.secret", "cotal.main.inst.UB.UA"} {
		leaf := n.LeafSubject(local)
		if !strings.HasPrefix(leaf, "cotal.main.leaf.") {
			t.Errorf("LeafSubject(%s) = %s", local, leaf)
		}
		if back, err := n.LocalSubject(leaf); err != nil || back != local {
			t.Errorf("LocalSubject(%s) = %s, %v; want %s", leaf, back, err, local)
		}
	}
	for _, bad := range []string{"cotal.main.leaf.presence.UA", "cotal.main.leaf.svc.r.UA", "cotal.other.leaf.chat.UA.x",
		"cotal.main.chat.UA.general", "cotal.main.leaf.chat", "cotal.main.leaf.", ""} {
		if got, err := n.LocalSubject(bad); err == nil {
			t.Errorf("LocalSubject(%q) = %q, want an error", bad, got)
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
		{"a relayed subject", n.LeafSubject(n.ChatSubject(alice, "general")), chat, false},
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
	for _, s := range []string{"cotal.main.leaf.chat.UA.general", "cotal.main.leaf.inst.UB.UA", "cotal.main.leaf.presence.UA", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		local, err := n.LocalSubject(s)
		if err != nil {
			return
		}
		if n.LeafSubject(local) != s {
			t.Fatalf("LeafSubject(LocalSubject(%q)) = %q", s, n.LeafSubject(local))
		}
	})
}

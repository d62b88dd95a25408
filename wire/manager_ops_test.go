package wire

import (
	"slices"
	"testing"
)

func TestManagerControlGrants(t *testing.T) {
	n := NewNames("main")
	const id = "UABC"
	ctl := "cotal.main.ctl.manager.UABC"
	tests := []struct {
		name string
		p    Permissions
		pub  []string // must hold
		sub  []string
		not  []string // must hold in neither list
	}{
		{"a supervised agent reaches its own manager subject and replies",
			AgentPermissions(n, id, AgentScope{ManagerControl: true}), []string{ctl}, []string{ctl + ".reply.>"},
			[]string{"cotal.main.ctl.manager.*", "cotal.main.ctl.manager.>"}},
		{"any other agent reaches no manager subject",
			AgentPermissions(n, id, AgentScope{}), nil, nil, []string{ctl, ctl + ".reply.>"}},
		{"the service takes every request and answers in the reply subtrees",
			ManagerControlPermissions(n), []string{"cotal.main.ctl.manager.*.reply.>"}, []string{"cotal.main.ctl.manager.*"},
			[]string{"cotal.main.ctl.manager.>", "cotal.main.ctl.delivery.*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.pub {
				if !slices.Contains(tt.p.Pub.Allow, s) {
					t.Errorf("publish lacks %s: %v", s, tt.p.Pub.Allow)
				}
			}
			for _, s := range tt.sub {
				if !slices.Contains(tt.p.Sub.Allow, s) {
					t.Errorf("subscribe lacks %s: %v", s, tt.p.Sub.Allow)
				}
			}
			for _, s := range tt.not {
				if slices.Contains(tt.p.Pub.Allow, s) || slices.Contains(tt.p.Sub.Allow, s) {
					t.Errorf("grants %s", s)
				}
			}
		})
	}
}

package endpoint

import (
	"strings"
	"testing"

	"github.com/cotal-go/cotal/wire"
)

func TestFollowSubjects(t *testing.T) {
	n := wire.NewNames("main")
	tests := []struct {
		name string
		opts FollowOptions
		acl  []string
		want string
	}{
		{"a bare admin follow with Unicast taps chat, DMs and anycasts", FollowOptions{Unicast: true}, []string{">"},
			"cotal.main.chat.*.> cotal.main.inst.> cotal.main.svc.>"},
		{"an observer follow taps chat only", FollowOptions{}, []string{">"}, "cotal.main.chat.*.>"},
		{"an agent follow taps the channels of its read ACL", FollowOptions{}, []string{"general", "team.>"},
			"cotal.main.chat.*.general cotal.main.chat.*.team.>"},
		{"named channels replace the read ACL", FollowOptions{Channels: []string{"general"}}, []string{">"},
			"cotal.main.chat.*.general"},
		{"open mode, with no read ACL, taps every channel", FollowOptions{}, nil, "cotal.main.chat.*.>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(followSubjects(n, tt.opts, tt.acl), " "); got != tt.want {
				t.Fatalf("subjects %q, want %q", got, tt.want)
			}
		})
	}
}

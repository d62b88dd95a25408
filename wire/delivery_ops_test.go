package wire

import (
	"encoding/json"
	"testing"
)

// The delivery ops' JSON is what docs/storage.md "Control service" shows and what the public
// reference client sends and reads; a renamed field would break it silently.
func TestDeliveryOpsEncodeAsLayout(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"durableJoin args carry the channel", DurableJoinArgs{Channel: "team"}, `{"channel":"team"}`},
		{"an established join carries its generation", DurableJoinReply{Durable: true, Generation: 3}, `{"durable":true,"generation":3}`},
		{"a declined join carries only its reason", DurableJoinReply{Reason: "channel is live"}, `{"durable":false,"reason":"channel is live"}`},
		{"durableLeave args carry channel and generation", DurableLeaveArgs{Channel: "team", Generation: 0}, `{"channel":"team","generation":0}`},
		{"a leave reply names the channel", DurableLeaveReply{Channel: "team"}, `{"channel":"team"}`},
		{"a repeated leave says it was already left", DurableLeaveReply{Channel: "team", AlreadyLeft: true}, `{"channel":"team","alreadyLeft":true}`},
		{"an empty membership list is an empty array", ListMembershipsReply{Memberships: []MembershipInfo{}}, `{"memberships":[]}`},
		{"a membership lists its gaps only when there are some",
			ListMembershipsReply{Memberships: []MembershipInfo{{Channel: "team", Generation: 1, Activated: true}, {Channel: "b", Generation: 2, Gaps: []SeqRange{{First: 4, Last: 6}}}}},
			`{"memberships":[{"channel":"team","generation":1,"activated":true},{"channel":"b","generation":2,"activated":false,"gaps":[{"first":4,"last":6}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("encodes %s, want %s", got, tt.want)
			}
		})
	}
}

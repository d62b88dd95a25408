package wire

import (
	"slices"
	"testing"
	"time"
)

func TestInstanceConsumerSpecs(t *testing.T) {
	n := NewNames("main")
	tests := []struct {
		name string
		role string
		want []string
	}{
		{"an instance without a role binds its DM and DLV durables", "", []string{"dm_alice", "dlv_alice"}},
		{"an instance with a role also binds the role's shared durable", "coder", []string{"dm_alice", "dlv_alice", "svc_coder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range n.InstanceConsumerSpecs("alice", tt.role, time.Minute) {
				if c.Ack != AckExplicit || c.AckWait != time.Minute || c.Deliver != DeliverAll {
					t.Errorf("%s = %+v, want explicit ack, the given ack wait, deliver all", c.Name, c)
				}
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("consumers = %q, want %q", got, tt.want)
			}
		})
	}
}

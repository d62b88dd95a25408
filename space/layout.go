package space

import (
	"time"

	"github.com/cotal-go/cotal/wire"
)

// defaultAckWait is the ack wait of the bind-only dm_, svc_ and dlv_ consumers unless
// Options.AckWait says otherwise (SPEC §8, LAYOUT.md "Consumers").
const defaultAckWait = wire.DefaultAckWait

// instanceConsumers returns the bind-only consumers of one instance: dm_<id>, dlv_<id> and,
// with a role, svc_<role> (SPEC §8, §9 item 3). The mesh creates them; agents may bind but
// never create them.
func instanceConsumers(n wire.Names, id, role string, ackWait time.Duration) []wire.ConsumerSpec {
	specs := []wire.ConsumerSpec{n.DMConsumerSpec(id, ackWait), n.DLVConsumerSpec(id, ackWait)}
	if role != "" {
		specs = append(specs, n.SvcConsumerSpec(role, ackWait))
	}
	return specs
}

package space

import "github.com/cotal-go/cotal/wire"

// defaultAckWait is the ack wait of the bind-only dm_, svc_ and dlv_ consumers unless
// Options.AckWait says otherwise (SPEC §8, docs/storage.md "Consumers").
const defaultAckWait = wire.DefaultAckWait

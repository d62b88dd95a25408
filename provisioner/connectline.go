package provisioner

import (
	"fmt"

	"github.com/cotal-go/cotal/wire"
)

// connectOverhead is the part of a CONNECT line that is not the user JWT: the signed nonce,
// the public key, the client name, library and version, and the JSON keys and flags. 4 KiB
// leaves room for a client name of some 3 KiB.
const connectOverhead = 4 << 10

// maxUserJWT is the longest user JWT whose CONNECT line the broker accepts: the broker's own
// max_control_line (wire.MaxControlLine, one rule in one place) less connectOverhead.
const maxUserJWT = wire.MaxControlLine - connectOverhead

// checkConnectLine refuses a user JWT too long to ever connect: the broker would drop the
// connection at CONNECT and the client retry forever. The message says how many of g's
// channel grant entries would fit, in proportion to the JWT's length.
func checkConnectLine(token string, g Grants) error {
	if len(token) <= maxUserJWT {
		return nil
	}
	n := len(g.Subscribe) + len(g.AllowSubscribe) + len(g.AllowPublish)
	return fmt.Errorf("%w: the user JWT is %d bytes and the broker's CONNECT line (max_control_line %d) "+
		"leaves %d for it; about %d of its %d channel grant entries (subscribe, allowSubscribe and "+
		"allowPublish together) fit: grant fewer channels, or cover them with wildcard grants such as team.>",
		ErrCredentialTooLarge, len(token), wire.MaxControlLine, maxUserJWT, n*maxUserJWT/len(token), n)
}

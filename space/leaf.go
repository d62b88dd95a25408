package space

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/wire"
)

// LeafOptions link meshes as hub and leaf (docs/accounts.md "Leaf links"), per space: a leaf
// mesh (a laptop) binds a space's agent account to the same space's agent account on the hub,
// so its agents and the hub's see each other's live chat, DMs and presence while the link is
// up, and keep working among themselves while it is down. Each side keeps its own key store,
// streams and buckets; wire.LeafPermissions says what crosses and wire.LeafLocalSubjects what
// never does.
type LeafOptions struct {
	// Listen is a hub's leaf node listener "host:port", which leaf meshes connect to with a
	// credential of the leaf profile (provisioner.ProfileLeaf). It takes TLS when the client
	// listener does. Empty: the mesh accepts no leaf.
	Listen string `koanf:"listen"`
	// Hub is the hub's leaf node URL this mesh connects to as a leaf, e.g.
	// nats-leaf://hub.example:7422 (tls://... for a hub with TLS). Empty: the mesh is no leaf.
	Hub string `koanf:"hub"`
	// Creds maps each space linked to the hub to the .creds file of the leaf credential the
	// hub minted for it; a space not listed stays local. Each file must be readable and not
	// readable by others (mode 0600): it lets its holder speak on the hub for every agent of
	// the space that no other side speaks for, and hear what the hub sends down. cotal.yaml
	// writes it as a list of SPACE=FILE entries.
	Creds map[string]string `koanf:"creds"`
}

// LeafDomain is the JetStream domain of a leaf mesh. JetStream traffic never crosses a leaf
// link (wire.LeafLocalSubjects), so every leaf can share the name; it keeps a leaf's API
// apart from the hub's all the same.
const LeafDomain = "leaf"

// leafReconnect is how long a leaf waits between attempts to reach its hub.
const leafReconnect = time.Second

// leaf reports whether the mesh connects to a hub.
func (o Options) leaf() bool { return o.Leaf.Hub != "" }

// leafLinked reports whether the mesh runs either side of a leaf link.
func (o Options) leafLinked() bool { return o.leaf() || o.Leaf.Listen != "" }

// validateLeaf checks the leaf options a mesh cannot start with.
func (o Options) validateLeaf() error {
	l := o.Leaf
	switch {
	case !o.leafLinked() && len(l.Creds) == 0:
		return nil
	case o.Open:
		return fmt.Errorf("a leaf link runs in operator mode only: drop open, or the leaf settings")
	case o.clustered():
		return fmt.Errorf("leaf links are not supported on a cluster node: run the hub or the leaf as a single mesh, or drop the leaf settings")
	case l.Hub != "" && l.Listen != "":
		return fmt.Errorf("leaf.hub and leaf.listen are both set: a mesh is either a hub (leaf.listen) or a leaf (leaf.hub), not both")
	case l.Hub == "" && len(l.Creds) > 0:
		return fmt.Errorf("leaf.creds is set without leaf.hub: set the hub's leaf URL, or drop leaf.creds")
	case l.Hub != "" && len(l.Creds) == 0:
		return fmt.Errorf("leaf.hub is set without leaf.creds: give each space the .creds file the hub minted for it (cotal auth mint --profile leaf on the hub)")
	}
	for _, s := range slices.Sorted(maps.Keys(l.Creds)) {
		if !slices.Contains(o.Spaces, s) {
			return fmt.Errorf("leaf.creds names space %q, which this mesh does not run: add it to spaces, or drop it from leaf.creds", s)
		}
		if err := checkLeafCreds(wire.NewNames(s), l.Creds[s]); err != nil {
			return fmt.Errorf("leaf.creds for space %s: %w", s, err)
		}
	}
	return nil
}

// checkLeafCreds refuses a credential file that is missing, that other users may read, or
// whose user may not carry what the relays send across (wire.LeafPermissions).
func checkLeafCreds(n wire.Names, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: save the file `cotal auth mint --profile leaf` wrote on the hub", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is readable by other users (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	uc, err := leafClaims(path)
	if err != nil {
		return err
	}
	want := wire.LeafPermissions(n, uc.Subject)
	for _, s := range want.Pub.Allow {
		if !slices.Contains(uc.Pub.Allow, s) {
			return oldLeafCreds(path, s)
		}
	}
	for _, s := range want.Sub.Allow {
		if !slices.Contains(uc.Sub.Allow, s) {
			return oldLeafCreds(path, s)
		}
	}
	return nil
}

func oldLeafCreds(path, subject string) error {
	return fmt.Errorf("%w: %s may not carry %s; mint a new one on the hub "+
		"(cotal auth mint --profile leaf) once it runs this version, and save it here", ErrOldLeafCreds, path, subject)
}

// leafClaims reads the user claims of the leaf credential file at path.
func leafClaims(path string) (*jwt.UserClaims, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	token, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: save the file `cotal auth mint --profile leaf` wrote on the hub", path, err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: save the file `cotal auth mint --profile leaf` wrote on the hub", path, err)
	}
	return uc, nil
}

// leafCredID is the id of the leaf credential in the file at path, which its relay sends up
// under.
func leafCredID(path string) (string, error) {
	uc, err := leafClaims(path)
	if err != nil {
		return "", err
	}
	return uc.Subject, nil
}

// ErrOldLeafCreds refuses a leaf credential minted for an older link, one that carried chat
// and DMs under their own subjects or heard every other leaf (docs/leaf.md).
var ErrOldLeafCreds = errors.New("space: the leaf credential was minted for an older link")

// leafConfig fills c's leaf fields: a hub's listener, or a leaf's domain and one remote per
// linked space, bound to that space's agent account and denying wire.LeafLocalSubjects both
// ways whatever the hub allows.
func (m *Mesh) leafConfig(c *broker.Config) {
	if !m.opts.leafLinked() {
		return
	}
	c.Leaf = &broker.Leaf{Listen: m.opts.Leaf.Listen, ReconnectInterval: leafReconnect}
	if !m.opts.leaf() {
		return
	}
	c.Leaf.Domain = LeafDomain
	for _, s := range slices.Sorted(maps.Keys(m.opts.Leaf.Creds)) {
		local := wire.NewNames(s).LeafLocalSubjects()
		c.Leaf.Remotes = append(c.Leaf.Remotes, broker.LeafRemote{URL: m.opts.Leaf.Hub,
			LocalAccount: m.agentAccount[s], Credentials: m.opts.Leaf.Creds[s],
			DenyImports: local, DenyExports: local})
	}
}

// LeafStatus is the mesh's side of its leaf links; Status has none on a mesh that runs no leaf
// link.
type LeafStatus struct {
	// Role is "hub" (it accepts leaf meshes) or "leaf" (it connects to a hub).
	Role string `json:"role"`
	// Hub is the hub's URL a leaf connects to; empty on a hub.
	Hub string `json:"hub,omitempty"`
	// Listen is a hub's leaf node URL; empty on a leaf.
	Listen string `json:"listen,omitempty"`
	// Links are, per space, the links up now: on a leaf at most one per linked space, on a hub
	// one per leaf mesh connected.
	Links []LeafLinkStatus `json:"links"`
}

// LeafLinkStatus is one space's link as this mesh sees it.
type LeafLinkStatus struct {
	Space string `json:"space"`
	// Up is true while the link is connected; a leaf mesh's agents keep working among
	// themselves while it is not.
	Up bool `json:"up"`
	// Remote is the other side's "host:port" while Up.
	Remote string `json:"remote,omitempty"`
	// RTT is the link's last round-trip time while Up.
	RTT time.Duration `json:"rtt,omitempty"`
}

// leafStatus reads the links from the embedded server: nil on a mesh without leaf links. On
// a leaf every linked space is listed, up or not; on a hub only the links up.
func (m *Mesh) leafStatus() *LeafStatus {
	if !m.opts.leafLinked() {
		return nil
	}
	st := &LeafStatus{Role: "hub", Listen: m.broker.LeafURL(), Links: []LeafLinkStatus{}}
	bySpace := map[string]string{}
	for s, acct := range m.agentAccount {
		bySpace[acct] = s
	}
	up := map[string]bool{}
	for _, l := range m.broker.LeafLinks() {
		s, ok := bySpace[l.Account]
		if !ok {
			continue
		}
		up[s] = true
		st.Links = append(st.Links, LeafLinkStatus{Space: s, Up: true, Remote: l.Remote, RTT: l.RTT})
	}
	if m.opts.leaf() {
		st.Role, st.Hub, st.Listen = "leaf", m.opts.Leaf.Hub, ""
		for s := range m.opts.Leaf.Creds {
			if !up[s] {
				st.Links = append(st.Links, LeafLinkStatus{Space: s})
			}
		}
	}
	slices.SortFunc(st.Links, func(a, b LeafLinkStatus) int {
		return cmp.Or(strings.Compare(a.Space, b.Space), strings.Compare(a.Remote, b.Remote))
	})
	return st
}

// leafLinks counts, per space the mesh links (linksSpace), the leaf links up now: 0 or 1 on
// a leaf, one per leaf mesh on a hub; nil without leaf links.
func (m *Mesh) leafLinks() map[string]int {
	if !m.opts.leafLinked() {
		return nil
	}
	n := map[string]int{}
	for s := range m.agentAccount {
		if m.linksSpace(s) {
			n[s] = 0
		}
	}
	for _, l := range m.broker.LeafLinks() {
		for s, acct := range m.agentAccount {
			if acct == l.Account && m.linksSpace(s) {
				n[s]++
			}
		}
	}
	return n
}

// leafHealth is each linked space's link for /healthz: "up" or "down" on a leaf, how many
// leaves are linked on a hub; nil without leaf links.
func (m *Mesh) leafHealth() map[string]string {
	links := m.leafLinks()
	if links == nil {
		return nil
	}
	h := map[string]string{}
	for s, n := range links {
		switch {
		case m.opts.Leaf.Listen != "":
			h[s] = fmt.Sprintf("%d leaves linked", n)
		case n > 0:
			h[s] = "up"
		default:
			h[s] = "down"
		}
	}
	return h
}

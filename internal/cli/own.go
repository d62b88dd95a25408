package cli

import (
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// ownPrefix starts the name of every credential cotal's own commands mint for themselves
// beside `cotal up` ("cli-send-alice", see session.openLocal): short-lived identities that
// auth list, who and status hide unless --all is given, and the console hides too.
const ownPrefix = provisioner.CommandPrefix

// allHelp is the help of the --all flag of the commands that hide them.
const allHelp = "also show the short-lived credentials cotal's own commands mint for themselves (cli-*)"

func isOwnName(name string) bool { return provisioner.IsCommandName(name) }

// visibleCredentials are recs without cotal's own, unless all.
func visibleCredentials(recs []space.CredentialInfo, all bool) []space.CredentialInfo {
	if all {
		return recs
	}
	out := make([]space.CredentialInfo, 0, len(recs))
	for _, r := range recs {
		if !isOwnName(r.Name) {
			out = append(out, r)
		}
	}
	return out
}

// visiblePeers are peers without cotal's own identities, unless all.
func visiblePeers(peers []endpoint.Peer, all bool) []endpoint.Peer {
	if all {
		return peers
	}
	out := make([]endpoint.Peer, 0, len(peers))
	for _, p := range peers {
		if !isOwnName(p.Presence.Card.Name) {
			out = append(out, p)
		}
	}
	return out
}

// hideOwnMembers drops cotal's own identities from every space's members of st, unless all.
func hideOwnMembers(st *space.Status, all bool) {
	if all {
		return
	}
	for i := range st.Spaces {
		members := st.Spaces[i].Members[:0]
		for _, m := range st.Spaces[i].Members {
			if !isOwnName(m.Name) {
				members = append(members, m)
			}
		}
		st.Spaces[i].Members = members
	}
}

// Package agentfile reads and writes agent files: one Markdown file per agent whose YAML
// frontmatter is the agent's identity and channel grants and whose body is its persona, the
// text a runtime appends to its system prompt. The format is the Cotal reference
// implementation's, so one team's files serve either implementation.
//
// Parse refuses what would mint a credential other than the file says: a grant the mint would
// refuse (checked by provisioner.Grants.Validate, the mint's own rule), a name that is not a
// routing token, a profile other than agent, a key given twice, and the reference's renamed
// keys. Keys it does not know are ignored.
package agentfile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid agent file")

// MaxSize bounds an agent file in bytes: a persona is a short contract, not a document, and
// a launcher passes it as one command-line argument, which Linux bounds at 128 KiB.
const MaxSize = 64 << 10

// MaxNameLen bounds an agent's name, which is also its file name.
const MaxNameLen = 64

// Agent is one agent file.
type Agent struct {
	Name           string   `json:"name"`
	Role           string   `json:"role,omitempty"`
	Kind           string   `json:"kind,omitempty"` // agent or endpoint; both mint the agent profile
	Description    string   `json:"description,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	Subscribe      []string `json:"subscribe,omitempty"`
	AllowSubscribe []string `json:"allowSubscribe,omitempty"`
	AllowPublish   []string `json:"allowPublish,omitempty"`
	Model          string   `json:"model,omitempty"`
	// Capabilities are what a supervised runtime of the file may ask of the manager service
	// (wire.CapabilitySpawn); the reference's key.
	Capabilities []string `json:"capabilities,omitempty"`
	Persona      string   `json:"persona,omitempty"`

	path  string
	lines map[string][]int // per grant key, the line of each entry (of the key for a scalar)
}

// Grants are the channel grants and role the file declares, as the mint takes them.
func (a *Agent) Grants() provisioner.Grants {
	return provisioner.Grants{Subscribe: a.Subscribe, AllowSubscribe: a.AllowSubscribe,
		AllowPublish: a.AllowPublish, Role: a.Role}
}

// Where is "path:line" of entry i of the grant key (subscribe, allowSubscribe, allowPublish,
// role), or the path alone when the line is not known.
func (a *Agent) Where(key string, i int) string {
	if l := a.lines[key]; i < len(l) {
		return fmt.Sprintf("%s:%d", a.path, l[i])
	}
	return a.path
}

// WideGrants are the read and publish grants whose first segment is a wildcard (`>`, `*.x`):
// each covers channels of every team, including ones nobody has made yet.
func (a *Agent) WideGrants() []string {
	var out []string
	for _, list := range []struct {
		key     string
		entries []string
	}{{"subscribe", a.Subscribe}, {"allowSubscribe", a.AllowSubscribe}, {"allowPublish", a.AllowPublish}} {
		for i, ch := range list.entries {
			if first, _, _ := strings.Cut(ch, "."); first == "*" || first == ">" {
				out = append(out, fmt.Sprintf("%s: %s %q", a.Where(list.key, i), list.key, ch))
			}
		}
	}
	return out
}

// CheckName refuses a name that is not a routing token of at most MaxNameLen bytes: the name
// is also the file's name, so a separator or a dot could reach outside an agents directory.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalid)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: name %q is %d bytes, the limit is %d", ErrInvalid, name, len(name), MaxNameLen)
	case wire.Sanitize(name) != name:
		return fmt.Errorf("%w: name %q: use only letters, digits, '_' and '-', e.g. %q", ErrInvalid, name, wire.Sanitize(name))
	}
	return nil
}

// fence is the line that opens and closes the frontmatter.
const fence = "---"

// split cuts data into its frontmatter and body at the fence lines.
func split(data []byte) (front, body []byte, ok bool) {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	rest, found := bytes.CutPrefix(data, []byte(fence+"\n"))
	if !found {
		return nil, nil, false
	}
	if after, found := bytes.CutPrefix(rest, []byte(fence+"\n")); found {
		return nil, after, true // no keys at all
	}
	front, body, found = bytes.Cut(rest, []byte("\n"+fence+"\n"))
	if !found {
		front, found = bytes.CutSuffix(rest, []byte("\n"+fence))
	}
	return front, body, found
}

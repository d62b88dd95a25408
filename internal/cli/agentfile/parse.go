package agentfile

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// Parse reads the agent file text data; path names the file in errors, which say
// "path:line:" where the line is known and wrap ErrInvalid.
func Parse(path string, data []byte) (*Agent, error) {
	a, err := parse(path, data)
	var le *lineError
	switch {
	case errors.As(err, &le):
		return nil, fmt.Errorf("%s:%d: %w", path, le.line, le.err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// lineError is an error at a line of the file.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// frontLine is the file line of the frontmatter's first line, after the opening fence.
const frontLine = 2

func parse(path string, data []byte) (*Agent, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalid, len(data), MaxSize)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not UTF-8 text", ErrInvalid)
	}
	front, body, ok := split(data)
	if !ok {
		return nil, fmt.Errorf("%w: it must open with a %q line and close the frontmatter with another", ErrInvalid, fence)
	}
	a := &Agent{path: path, lines: map[string][]int{}, Persona: strings.TrimSpace(string(body))}
	var doc yaml.Node
	// The opening fence is line 1, so with one line in its place YAML counts file lines.
	if err := yaml.Unmarshal(append([]byte("\n"), front...), &doc); err != nil {
		return nil, fmt.Errorf("%w: frontmatter: %w", ErrInvalid, err)
	}
	if len(doc.Content) > 0 {
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil, lineErr(m, "the frontmatter must be `key: value` lines")
		}
		if err := a.fields(m); err != nil {
			return nil, err
		}
	}
	if err := CheckName(a.Name); err != nil {
		return nil, &lineError{a.nameLine(), fmt.Errorf("%w; set `name:` in the frontmatter", err)}
	}
	if err := a.Grants().Validate(); err != nil {
		return nil, a.grantErr(err)
	}
	return a, nil
}

// grantErr is the mint's refusal of a grant, at the line the grant was written on.
func (a *Agent) grantErr(err error) error {
	var ge *provisioner.GrantError
	if errors.As(err, &ge) {
		if l := a.lines[ge.Field]; ge.Index < len(l) {
			return &lineError{l[ge.Index], fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}

// renamed are keys of the reference's first format. A file that still uses them is refused
// rather than read without the grants its author meant.
var renamed = map[string]string{
	"channels": "subscribe (and allowSubscribe)",
	"publish":  "allowPublish",
}

// fields reads the frontmatter mapping m into a.
func (a *Agent) fields(m *yaml.Node) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return lineErr(k, "a key must be a plain word")
		}
		if seen[k.Value] {
			return lineErr(k, fmt.Sprintf("%q is given twice; keep one", k.Value))
		}
		seen[k.Value] = true
		if to, ok := renamed[k.Value]; ok {
			return lineErr(k, fmt.Sprintf("%q was renamed; write %s", k.Value, to))
		}
		if err := a.field(k, v); err != nil {
			return err
		}
	}
	return nil
}

// field sets the known key k to v; other keys are ignored.
func (a *Agent) field(k, v *yaml.Node) error {
	str := map[string]*string{"name": &a.Name, "role": &a.Role, "kind": &a.Kind,
		"description": &a.Description, "model": &a.Model}
	list := map[string]*[]string{"tags": &a.Tags, "subscribe": &a.Subscribe,
		"allowSubscribe": &a.AllowSubscribe, "allowPublish": &a.AllowPublish, "capabilities": &a.Capabilities}
	switch p := str[k.Value]; {
	case p != nil:
		s, err := scalar(k.Value, v)
		*p = s
		a.lines[k.Value] = []int{v.Line}
		if err == nil && k.Value == "kind" && s != "" && s != "agent" && s != "endpoint" {
			err = lineErr(v, fmt.Sprintf("kind %q: use agent or endpoint", s))
		}
		return err
	case list[k.Value] != nil:
		entries, lines, err := sequence(k.Value, v)
		*list[k.Value] = entries
		a.lines[k.Value] = lines
		if err == nil && k.Value == "capabilities" {
			for i, c := range entries {
				if !wire.KnownCapability(c) {
					return &lineError{lines[i], fmt.Errorf("%w: capability %q is unknown; use %s", ErrInvalid, c, wire.CapabilitySpawn)}
				}
			}
		}
		return err
	case k.Value == "profile":
		// Not a key of the format: a file that names a profile is refused unless it names the
		// only one an agent file mints, so no file can ask for an admin or observer credential.
		if s, err := scalar(k.Value, v); err != nil || s != "agent" {
			return lineErr(v, "an agent file mints agent credentials only; remove `profile:`")
		}
	}
	return nil
}

// scalar is the text of v, which must be a scalar; null is empty.
func scalar(key string, v *yaml.Node) (string, error) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return "", nil
	case v.Kind == yaml.ScalarNode:
		return v.Value, nil
	}
	return "", lineErr(v, fmt.Sprintf("%s must be a single value", key))
}

// sequence is the entries of v with their file lines: a list of scalars, or one scalar (a
// list of one, as the reference reads it); null is none.
func sequence(key string, v *yaml.Node) ([]string, []int, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil, nil, nil
		}
		return []string{v.Value}, []int{v.Line}, nil
	case yaml.SequenceNode:
	default:
		return nil, nil, lineErr(v, fmt.Sprintf("%s must be a list, e.g. [general, team.>]", key))
	}
	var entries []string
	var lines []int
	for _, e := range v.Content {
		if e.Kind != yaml.ScalarNode {
			return nil, nil, lineErr(e, fmt.Sprintf("each %s entry must be a single value", key))
		}
		entries = append(entries, e.Value)
		lines = append(lines, e.Line)
	}
	return entries, lines, nil
}

// lineErr is ErrInvalid with what at the file line of n. An alias node (`*x`) lands here too:
// no value of an agent file is one.
func lineErr(n *yaml.Node, what string) error {
	return &lineError{n.Line, fmt.Errorf("%w: %s", ErrInvalid, what)}
}

// nameLine is the line of `name:`, or the frontmatter's first line without one.
func (a *Agent) nameLine() int {
	if l := a.lines["name"]; len(l) > 0 {
		return l[0]
	}
	return frontLine
}

package agentfile

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Format is a's file text: the frontmatter with the keys a sets, lists in flow style
// (`[a, b]`, the form the reference's reader takes), then the persona. Text Parse would
// refuse is refused.
func (a *Agent) Format() ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	}
	for _, f := range []struct{ key, v string }{{"name", a.Name}, {"role", a.Role}, {"kind", a.Kind},
		{"description", a.Description}} {
		if f.v != "" {
			add(f.key, str(f.v))
		}
	}
	for _, f := range []struct {
		key string
		v   []string
	}{{"tags", a.Tags}, {"subscribe", a.Subscribe}, {"allowSubscribe", a.AllowSubscribe}, {"allowPublish", a.AllowPublish},
		{"capabilities", a.Capabilities}} {
		if len(f.v) > 0 {
			seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, e := range f.v {
				seq.Content = append(seq.Content, str(e))
			}
			add(f.key, seq)
		}
	}
	if a.Model != "" {
		add("model", str(a.Model))
	}
	var buf bytes.Buffer
	buf.WriteString(fence + "\n")
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	buf.WriteString(fence + "\n\n")
	if a.Persona != "" {
		buf.WriteString(a.Persona + "\n")
	}
	if _, err := Parse(a.Name+".md", buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// str is a string scalar node, quoted by the encoder where YAML would read it as another type.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

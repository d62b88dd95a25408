package launch

import (
	"slices"
	"testing"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/agentfile"
)

func TestArgvAddsThePresetsFlagsAfterTheCommand(t *testing.T) {
	a := &Agent{State: "/d/spawn/main/rev", Cred: &admin.MintedCredential{Space: "main"},
		Spec: Spec{Agent: &agentfile.Agent{Name: "rev", Persona: "You review.", Model: "opus"}}}
	mcp := "--mcp-config=/d/spawn/main/rev/mcp.json"
	tests := []struct {
		name, runtime string
		command, want []string
	}{
		{"claude by name gets the preset", "auto", []string{"/usr/bin/claude", "--resume"},
			[]string{"/usr/bin/claude", mcp, "--append-system-prompt", "You review.", "--model", "opus", "--resume"}},
		{"another command runs as given", "auto", []string{"./agent", "-v"}, []string{"./agent", "-v"}},
		{"plain leaves claude as given", "plain", []string{"claude"}, []string{"claude"}},
		{"claude forces the preset on any command", "claude", []string{"wrapper"},
			[]string{"wrapper", mcp, "--append-system-prompt", "You review.", "--model", "opus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.Runtime, a.Command = tt.runtime, tt.command
			if got := a.Argv(); !slices.Equal(got, tt.want) {
				t.Fatalf("Argv = %q, want %q", got, tt.want)
			}
		})
	}
	env := a.Env()
	for _, want := range []string{"COTAL_NAME=rev", "COTAL_SPACE=main", "COTAL_CREDS=/d/spawn/main/rev/rev.creds",
		"COTAL_PERSONA_FILE=/d/spawn/main/rev/persona.md"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env lacks %s: %q", want, env)
		}
	}
}

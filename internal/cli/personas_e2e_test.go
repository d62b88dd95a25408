package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPersonasNewListShowEditRm(t *testing.T) {
	bin := cotalBin(t)
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		env  []string
		args []string
		code int
		want string // in stdout, or stderr when code is not 0
	}{
		{"new writes the file", nil, []string{"personas", "new", "reviewer", "--role", "code-review",
			"--subscribe", "general,team.backend", "--allow-publish", "team.backend", "--persona", "You review."},
			0, filepath.Join(project, ".cotal", "agents", "reviewer.md")},
		{"new never replaces", nil, []string{"personas", "new", "reviewer"}, 1, "exists"},
		{"list shows it", nil, []string{"personas", "list"}, 0, "reviewer  code-review  general,team.backend  team.backend"},
		{"show shows the persona", nil, []string{"personas", "show", "reviewer"}, 0, "allowPublish:   team.backend\n\nYou review.\n"},
		{"edit saves what parses", []string{"EDITOR=sed -i s/code-review/triage/"}, []string{"personas", "edit", "reviewer"}, 0, "saved"},
		{"the edit took", nil, []string{"personas", "show", "reviewer"}, 0, "role:           triage"},
		{"edit keeps a bad grant out", []string{"EDITOR=sed -i s/team.backend]/foo\\/bar]/"}, []string{"personas", "edit", "reviewer"},
			1, "the edit was not saved"},
		{"the file is unchanged", nil, []string{"personas", "show", "reviewer"}, 0, "allowPublish:   team.backend"},
		{"rm removes it", nil, []string{"personas", "rm", "reviewer"}, 0, "removed"},
		{"show finds nothing after", nil, []string{"personas", "show", "reviewer"}, 1, "no agent file named \"reviewer\""},
		{"new --user writes to the user's directory", nil, []string{"personas", "new", "helper", "--user"},
			0, filepath.Join(project, "config", "cotal", "agents", "helper.md")},
		{"list shows the user's file too", nil, []string{"personas", "list"}, 0, "helper"},
	}
	for _, s := range steps {
		stdout, stderr, code := runIn(t, bin, project, s.env, s.args...)
		got := stdout
		if s.code != 0 {
			got = stderr
		}
		if code != s.code || !strings.Contains(got, s.want) {
			t.Fatalf("%s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d with %q", s.name, code, stdout, stderr, s.code, s.want)
		}
	}
	fi, err := os.Stat(filepath.Join(project, "config", "cotal", "agents", "helper.md"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
}

// writeAgentFile writes text as name's agent file in project/.cotal/agents.
func writeAgentFile(t *testing.T, project, name, text string) {
	t.Helper()
	dir := filepath.Join(project, ".cotal", "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runIn runs cotal in the directory dir with env added, the user's configuration directory
// being dir/config.
func runIn(t *testing.T, bin, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}, env...)...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run cotal %v: %v", args, err)
	}
	return o.String(), e.String(), 0
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/wire"
)

// envFakeRuntime makes the test binary the fake agent runtime `cotal spawn` runs: it writes
// what it was given and what the mesh let it do to the file the variable names, then exits.
const envFakeRuntime = "COTAL_TEST_FAKE_RUNTIME"

func init() {
	if out := os.Getenv(envFakeRuntime); out != "" {
		os.Exit(fakeRuntime(out))
	}
}

// runtimeReport is what the fake runtime saw.
type runtimeReport struct {
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Modes      map[string]string `json:"modes"` // file (base name) -> permission bits
	MCP        launch.MCPConfig  `json:"mcp"`
	Tools      []string          `json:"tools"`
	Persona    string            `json:"persona"`
	AllowedErr string            `json:"allowedErr"` // a post on an allowPublish channel
	DeniedErr  string            `json:"deniedErr"`  // a post outside it
	Err        string            `json:"err"`
}

func fakeRuntime(out string) int {
	r := runtimeReport{Args: os.Args[1:], Env: map[string]string{}, Modes: map[string]string{}}
	if err := r.observe(); err != nil {
		r.Err = err.Error()
	}
	data, _ := json.Marshal(r)
	if err := os.WriteFile(out+".tmp", data, 0o600); err != nil || os.Rename(out+".tmp", out) != nil {
		return 2
	}
	if os.Getenv(envFakeWait) == "" {
		return 0
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	if err := os.WriteFile(out+".term", nil, 0o600); err != nil {
		return 2
	}
	return 0
}

// envFakeWait makes the fake runtime wait for SIGTERM after its report, as a session does.
const envFakeWait = "COTAL_TEST_FAKE_WAIT"

func (r *runtimeReport) observe() error {
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "COTAL_") && k != envFakeRuntime {
			r.Env[k] = v
		}
	}
	creds := r.Env[envCreds]
	for _, p := range []string{filepath.Dir(creds), creds, r.Env["COTAL_MCP_CONFIG"], r.Env["COTAL_PERSONA_FILE"]} {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		r.Modes[filepath.Base(p)] = fmt.Sprintf("%04o", fi.Mode().Perm())
	}
	persona, err := os.ReadFile(r.Env["COTAL_PERSONA_FILE"])
	if err != nil {
		return err
	}
	r.Persona = string(persona)
	data, err := os.ReadFile(r.Env["COTAL_MCP_CONFIG"])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &r.MCP); err != nil {
		return err
	}
	if err := r.listTools(); err != nil {
		return fmt.Errorf("MCP: %w", err)
	}
	return r.post(creds)
}

// listTools runs the MCP server entry as a runtime does and lists its tools.
func (r *runtimeReport) listTools() error {
	e := r.MCP.MCPServers[launch.ServerName]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(e.Command, e.Args...)
	client := mcp.NewClient(&mcp.Implementation{Name: "fake-runtime", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range tools.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return nil
}

// post publishes as the agent on team.backend and on general, straight to the broker.
func (r *runtimeReport) post(creds string) error {
	data, err := os.ReadFile(creds)
	if err != nil {
		return err
	}
	cred, err := endpoint.ParseCredential(data)
	if err != nil {
		return err
	}
	nc, err := connectCreds(r.Env[envLink], creds, cred.ID)
	if err != nil {
		return err
	}
	defer nc.Close()
	names := wire.NewNames(cred.Space)
	for _, p := range []struct {
		channel string
		into    *string
	}{{"team.backend", &r.AllowedErr}, {"general", &r.DeniedErr}} {
		if err := nc.Publish(names.ChatSubject(cred.ID, p.channel), []byte("{}")); err != nil {
			return err
		}
		if err := nc.FlushTimeout(10 * time.Second); err != nil {
			return err
		}
		if err := nc.LastError(); err != nil {
			*p.into = err.Error()
		}
	}
	return nil
}

const reviewerFile = `---
name: reviewer
role: code-review
subscribe: [general, team.backend]
allowPublish: [team.backend]
model: opus
---
You review changes posted on team.backend.
`

// TestSpawnRunsTheAgentOfItsFileAndRevokesItAfter runs a fake runtime named claude as the
// agent of an agent file, and checks what it was given, that the broker holds it to the file's
// grants, and that its credential is revoked once it exits, then re-minted for the same id.
func TestSpawnRunsTheAgentOfItsFileAndRevokesItAfter(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh)
	writeAgentFile(t, project, "reviewer", reviewerFile)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(t.TempDir(), "claude") // the claude preset applies by name
	if err := os.Symlink(self, claude); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	_, stderr, code := runIn(t, bin, project, []string{envFakeRuntime + "=" + report},
		"spawn", "reviewer", "--dir", mesh, "--", claude, "--resume")
	if code != 0 {
		t.Fatalf("spawn: exit %d: %s", code, stderr)
	}
	r := readReport(t, report)
	id := checkReport(t, r, up.link)
	if strings.Contains(stderr, "SUUA") || strings.Contains(stderr, "-----BEGIN") {
		t.Errorf("spawn printed key material:\n%s", stderr)
	}
	checkRevoked(t, bin, mesh, id)
	if _, err := connectCreds(up.link, r.Env[envCreds], id); err == nil {
		t.Errorf("the despawned agent's credential still connects")
	}

	// A second spawn mints the same identity again, and revokes it again.
	if _, stderr, code := runIn(t, bin, project, []string{envFakeRuntime + "=" + report},
		"spawn", "reviewer", "--dir", mesh, "--", claude); code != 0 {
		t.Fatalf("second spawn: exit %d: %s", code, stderr)
	}
	if again := readReport(t, report); again.Err != "" || credID(t, again.Env[envCreds]) != id {
		t.Errorf("second spawn: report error %q, id %s; want the identity %s again", again.Err, credID(t, again.Env[envCreds]), id)
	}
	checkRevoked(t, bin, mesh, id)
}

func readReport(t *testing.T, path string) runtimeReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fake runtime left no report: %v", err)
	}
	var r runtimeReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func credID(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := endpoint.ParseCredential(data)
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// checkReport checks what the fake runtime saw and returns the agent's id.
func checkReport(t *testing.T, r runtimeReport, link string) string {
	t.Helper()
	if r.Err != "" {
		t.Fatalf("the fake runtime failed: %s", r.Err)
	}
	mcpPath, persona := r.Env["COTAL_MCP_CONFIG"], "You review changes posted on team.backend."
	wantArgs := []string{"--mcp-config=" + mcpPath, "--append-system-prompt", persona, "--model", "opus", "--resume"}
	if !slices.Equal(r.Args, wantArgs) {
		t.Errorf("claude was run with %q, want %q", r.Args, wantArgs)
	}
	if r.Env[envLink] != link || r.Env["COTAL_NAME"] != "reviewer" || r.Env["COTAL_ROLE"] != "code-review" {
		t.Errorf("environment %v: want the link %s, name reviewer, role code-review", r.Env, link)
	}
	if r.Persona != persona+"\n" {
		t.Errorf("persona file %q, want the file's body", r.Persona)
	}
	for f, mode := range r.Modes {
		if want := map[bool]string{true: "0700", false: "0600"}[f == "reviewer"]; mode != want {
			t.Errorf("%s has mode %s, want %s", f, mode, want)
		}
	}
	e := r.MCP.MCPServers[launch.ServerName]
	if len(e.Args) == 0 || e.Args[0] != "mcp" || !slices.Contains(e.Args, r.Env[envCreds]) {
		t.Errorf("MCP entry %+v does not run cotal mcp with the agent's credential", e)
	}
	if !slices.Contains(r.Tools, "cotal_send") || !slices.Contains(r.Tools, "cotal_inbox") {
		t.Errorf("tools/list gave %v; want the cotal_* tools", r.Tools)
	}
	if r.AllowedErr != "" {
		t.Errorf("a post on team.backend (allowPublish) was refused: %s", r.AllowedErr)
	}
	if !strings.Contains(r.DeniedErr, nats.ErrPermissionViolation.Error()) {
		t.Errorf("a post on general, outside allowPublish, gave %q; want the broker's permissions violation", r.DeniedErr)
	}
	return credID(t, r.Env[envCreds])
}

// checkRevoked wants `cotal auth list` to show id revoked.
func checkRevoked(t *testing.T, bin, mesh, id string) {
	t.Helper()
	if credentialActive(t, bin, mesh, id) {
		t.Errorf("credential %s is not revoked", id)
	}
}

// credentialActive reports whether `auth list` shows id not revoked.
func credentialActive(t *testing.T, bin, mesh, id string) bool {
	t.Helper()
	out, stderr, code := runCotal(t, bin, "auth", "list", "--dir", mesh, "--json", "--all")
	if code != 0 {
		t.Fatalf("auth list: exit %d: %s", code, stderr)
	}
	var recs []struct {
		ID      string `json:"id"`
		Revoked bool   `json:"revoked"`
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return !r.Revoked
		}
	}
	t.Fatalf("auth list has no credential %s", id)
	return false
}

// TestSpawnRefusesAFileThatAsksForMore runs spawn on agent files that try to grant more than
// an operator means; each is refused before anything is minted, naming why.
func TestSpawnRefusesAFileThatAsksForMore(t *testing.T) {
	bin := cotalBin(t)
	tests := []struct {
		name, file, text string
		mode             os.FileMode // of the agents directory; 0 for 0700
		fileMode         os.FileMode // of the file; 0 for 0600
		arg, want        string
	}{
		{name: "a grant of every channel", file: "loud", text: "---\nname: loud\nsubscribe: [general]\nallowPublish:\n  - \">\"\n---\n",
			want: `loud.md:5: allowPublish ">"; narrow it to your team's channels, or pass --allow-any-channel`},
		{name: "a read grant of every team's channel", file: "nosy", text: "---\nname: nosy\nallowSubscribe: [\"*.secrets\"]\n---\n",
			want: `nosy.md:3: allowSubscribe "*.secrets"`},
		{name: "an admin profile", file: "boss", text: "---\nname: boss\nprofile: admin\n---\n",
			want: "boss.md:3: invalid agent file: an agent file mints agent credentials only"},
		{name: "a name that leaves the directory", arg: "../x", want: `name "../x": use only letters`},
		{name: "a name with a terminal escape", arg: "a\x1b[2Jb", want: `name "a\x1b[2Jb"`},
		{name: "a file that names another agent", file: "helper", text: "---\nname: admin\n---\n",
			want: `declares name "admin", not "helper"`},
		{name: "a grant the mint refuses", file: "typo", text: "---\nname: typo\nallowPublish: [general, \"a b\"]\n---\n",
			want: "typo.md:3: invalid agent file: invalid grant: allowPublish entry"},
		{name: "a group-writable agents directory", file: "ok", text: "---\nname: ok\n---\n", mode: 0o770,
			want: "lets others write it"},
		{name: "a world-writable agent file", file: "ok", text: "---\nname: ok\n---\n", fileMode: 0o666,
			want: "lets others write it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project := t.TempDir()
			arg := tt.arg
			if tt.file != "" {
				writeAgentFile(t, project, tt.file, tt.text)
				arg = tt.file
			}
			dir := filepath.Join(project, ".cotal", "agents")
			if tt.mode != 0 {
				chmod(t, dir, tt.mode)
			}
			if tt.fileMode != 0 {
				chmod(t, filepath.Join(dir, tt.file+".md"), tt.fileMode)
			}
			_, stderr, code := runIn(t, bin, project, nil, "spawn", arg, "--dir", t.TempDir(), "--", "true")
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Errorf("spawn %q: exit %d, stderr:\n%s\nwant a refusal with %q", arg, code, stderr, tt.want)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestSpawnPassesSIGTERMOnAndRevokes terminates a spawn whose runtime is running: the runtime
// gets the signal, and the credential is revoked once it exits. Meanwhile a second spawn of the
// same agent is refused, as its re-mint would cut the first one off.
func TestSpawnPassesSIGTERMOnAndRevokes(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	writeAgentFile(t, project, "reviewer", reviewerFile)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	spawn := exec.Command(bin, "spawn", "reviewer", "--dir", mesh, "--", self)
	spawn.Dir = project
	spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(project, "config"),
		envFakeRuntime+"="+report, envFakeWait+"=1")
	var stderr testlog.Buffer
	spawn.Stderr = &stderr
	if err := spawn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spawn.Process.Kill() })
	await.True(t, 60*time.Second, "the runtime's report", func() bool {
		_, err := os.Stat(report)
		return err == nil
	})
	r := readReport(t, report)
	if r.Err != "" || r.DeniedErr == "" {
		t.Fatalf("the runtime saw %+v", r)
	}
	if len(r.Args) != 0 {
		t.Errorf("a command not named claude was given %q; the plain runtime adds no flags", r.Args)
	}
	if _, stderr, code := runIn(t, bin, project, nil, "spawn", "reviewer", "--dir", mesh, "--", "true"); code == 0 ||
		!strings.Contains(stderr, "the agent is already active") {
		t.Errorf("a second spawn of a running agent: exit %d, stderr:\n%s", code, stderr)
	}
	if err := spawn.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- spawn.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("spawn exited with %v after SIGTERM; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("spawn did not exit within 30s of SIGTERM; stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(report + ".term"); err != nil {
		t.Errorf("the runtime never got the SIGTERM: %v", err)
	}
	checkRevoked(t, bin, mesh, credID(t, r.Env[envCreds]))
}

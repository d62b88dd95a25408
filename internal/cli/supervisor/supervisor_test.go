package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// revoker records the revocations Reap asks for; unknown ids are refused as the mesh would.
type revoker struct {
	known   map[string]bool
	revoked []string
}

func (r *revoker) Mint(context.Context, admin.MintSpec) (*admin.MintedCredential, error) {
	return nil, errors.New("not in this test")
}

func (r *revoker) Revoke(_ context.Context, _, id string) error {
	if !r.known[id] {
		return provisioner.ErrUnknownCredential
	}
	r.revoked = append(r.revoked, id)
	return nil
}

func (r *revoker) Credentials(context.Context, string) ([]space.CredentialInfo, error) {
	return nil, nil
}

// startGroup runs sh with a child in a process group of its own, as the supervisor does.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & wait")
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = signalGroup(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

func TestReapKillsOnlyTheGroupItListedAndRevokes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: the start-time check reads /proc/PID/stat, which this system lacks")
	}
	listed, other := startGroup(t), startGroup(t)
	var start uint64
	await.True(t, 10*time.Second, "the start time of the listed group", func() bool {
		start = startTime(listed.Process.Pid)
		return start != 0
	})
	dir := t.TempDir()
	entries := []entry{
		{Space: "main", Name: "alive", PID: listed.Process.Pid, PGID: listed.Process.Pid, StartTime: start, Credential: "UALIVE"},
		// Another process holds the pid a dead agent had: its start time differs, so it is left.
		{Space: "main", Name: "reused", PID: other.Process.Pid, PGID: other.Process.Pid, StartTime: 1, Credential: "UREUSED"},
		{Space: "main", Name: "forgotten", Credential: "UFORGOTTEN"},
	}
	if err := writeState(dir, entries); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, StateFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s mode %v (%v), want 0600", StateFile, fi.Mode().Perm(), err)
	}
	var log strings.Builder
	r := &revoker{known: map[string]bool{"UALIVE": true, "UREUSED": true}}
	if _, err := Reap(context.Background(), dir, r, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatalf("Reap: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- listed.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the listed group was not killed")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the group whose start time differs was killed: %v", err)
	}
	if !slices.Equal(r.revoked, []string{"UALIVE", "UREUSED"}) {
		t.Errorf("revoked %v, want every listed credential the mesh knows", r.revoked)
	}
	for _, want := range []string{"name=alive pid=", "killed=true", "name=reused", "name=forgotten"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); !os.IsNotExist(err) {
		t.Errorf("%s is left after the reap: %v", StateFile, err)
	}
}

func TestReapKeepsTheStateWhenARevocationFails(t *testing.T) {
	dir := t.TempDir()
	if err := writeState(dir, []entry{{Space: "main", Name: "a", Credential: "UA"}}); err != nil {
		t.Fatal(err)
	}
	failing := &failingRevoker{}
	if _, err := Reap(context.Background(), dir, failing, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("Reap succeeded though the revocation failed")
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err != nil {
		t.Errorf("%s was cleared though a credential is still active: %v", StateFile, err)
	}
	if _, err := Reap(context.Background(), t.TempDir(), failing, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("Reap of a directory without state: %v", err)
	}
}

type failingRevoker struct{ revoker }

func (failingRevoker) Revoke(context.Context, string, string) error {
	return errors.New("mesh closing")
}

func TestLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "output.log")
	if err := os.WriteFile(path, []byte("one\r\ntwo\n\nthree"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		n    int
		want []string
	}{
		{"the last line even without its end", 1, []string{"three"}},
		{"blank lines kept, carriage returns dropped", 3, []string{"two", "", "three"}},
		{"more than there are is all of them", 10, []string{"one", "two", "", "three"}},
		{"none", 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lastLines(path, tt.n)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("lastLines(%d) = %q, %v; want %q", tt.n, got, err, tt.want)
			}
		})
	}
	if got, err := lastLines(filepath.Join(t.TempDir(), "none.log"), 5); err != nil || len(got) != 0 {
		t.Errorf("lastLines of a runtime that never wrote = %q, %v", got, err)
	}
}

// TestStartRefusesARequestItCannotRunAsGiven: the socket is the user's alone, but the mesh
// still checks what it is asked before it reads a file or mints.
func TestStartRefusesARequestItCannotRunAsGiven(t *testing.T) {
	ok := admin.AgentStart{Space: "main", Name: "worker", File: "/p/.cotal/agents/worker.md",
		Command: []string{"/bin/true"}, WorkDir: "/p"}
	tests := []struct {
		name string
		edit func(*admin.AgentStart)
		want string
	}{
		{"a name that leaves the directory", func(r *admin.AgentStart) { r.Name = "../x" }, `"../x"`},
		{"a name with a terminal escape", func(r *admin.AgentStart) { r.Name = "a\x1b[2Jb" }, "name"},
		{"no space", func(r *admin.AgentStart) { r.Space = "" }, "no space"},
		{"an unknown runtime", func(r *admin.AgentStart) { r.Runtime = "sh" }, `runtime "sh"`},
		{"no command", func(r *admin.AgentStart) { r.Command = nil }, "no command"},
		{"a relative agent file", func(r *admin.AgentStart) { r.File = "worker.md" }, "absolute"},
		{"a relative working directory", func(r *admin.AgentStart) { r.WorkDir = "." }, "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ok
			tt.edit(&req)
			err := checkStart(&req)
			if !errors.Is(err, admin.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkStart = %v, want a bad request naming %q", err, tt.want)
			}
		})
	}
	req := ok
	if err := checkStart(&req); err != nil || req.Runtime != "auto" {
		t.Fatalf("checkStart of a good request = %v, runtime %q; want nil and auto", err, req.Runtime)
	}
}

// A runtime `cotal spawn` runs is never killed by a reap: while it runs it is handed back to be
// watched; once it is gone its credential is revoked.
func TestReapLeavesASpawnedRuntimeAndRevokesAGoneOne(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: the start-time check reads /proc/PID/stat, which this system lacks")
	}
	running := startGroup(t)
	var start uint64
	await.True(t, 10*time.Second, "the start time of the spawned runtime", func() bool {
		start = startTime(running.Process.Pid)
		return start != 0
	})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeState(dir, []entry{
		{Space: "main", Name: "runs", PID: running.Process.Pid, StartTime: start, Credential: "URUNS", Foreground: true},
		{Space: "main", Name: "gone", PID: gone.Process.Pid, StartTime: 1, Credential: "UGONE", Foreground: true},
	}); err != nil {
		t.Fatal(err)
	}
	r := &revoker{known: map[string]bool{"URUNS": true, "UGONE": true}}
	watch, err := Reap(context.Background(), dir, r, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(watch) != 1 || watch[0].Name != "runs" || watch[0].PID != running.Process.Pid {
		t.Errorf("handed back %+v, want the running one alone", watch)
	}
	if !slices.Equal(r.revoked, []string{"UGONE"}) {
		t.Errorf("revoked %v, want the gone one's alone", r.revoked)
	}
	if err := running.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the spawned runtime was killed: %v", err)
	}
}

// A watched runtime's credential is revoked once it is gone, and not before.
func TestAWatchedRuntimeIsRevokedOnceGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: the start-time check reads /proc/PID/stat, which this system lacks")
	}
	rt := exec.Command("sleep", "300")
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Process.Kill(); _ = rt.Wait() })
	r := &revoker{known: map[string]bool{"UWATCHED": true}}
	s := &Supervisor{opts: Options{Dir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}, mint: r,
		agents: map[key]*agent{}, watched: map[key]entry{}}
	if err := s.Watch(admin.AgentWatch{Space: "main", Name: "w", Credential: "UWATCHED", PID: rt.Process.Pid,
		StartTime: startTime(rt.Process.Pid)}); err != nil {
		t.Fatal(err)
	}
	s.revokeGone()
	if len(r.revoked) != 0 {
		t.Fatalf("revoked %v while the runtime runs", r.revoked)
	}
	_ = rt.Process.Kill()
	_ = rt.Wait()
	s.revokeGone()
	if !slices.Equal(r.revoked, []string{"UWATCHED"}) {
		t.Fatalf("revoked %v after the runtime ended, want UWATCHED", r.revoked)
	}
	if _, err := os.Stat(filepath.Join(s.opts.Dir, StateFile)); !os.IsNotExist(err) {
		t.Errorf("%s lists a watch that ended: %v", StateFile, err)
	}
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/supervisor"
	"github.com/cotal-go/cotal/internal/procstat"
)

const workerFile = `---
name: worker
role: build
subscribe: [general]
allowPublish: [general]
---
You build what is asked on general.
`

// psAgents is what `cotal ps --json` lists.
func psAgents(t *testing.T, bin, mesh string) []admin.AgentInfo {
	t.Helper()
	out, stderr, code := runCotal(t, bin, "ps", "--dir", mesh, "--json")
	if code != 0 {
		t.Fatalf("ps: exit %d: %s", code, stderr)
	}
	var list []admin.AgentInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("ps --json printed %q: %v", out, err)
	}
	return list
}

// psAgent is name's row of `cotal ps`, false when it has none.
func psAgent(t *testing.T, bin, mesh, name string) (admin.AgentInfo, bool) {
	t.Helper()
	for _, a := range psAgents(t, bin, mesh) {
		if a.Name == name {
			return a, true
		}
	}
	return admin.AgentInfo{}, false
}

// awaitAgent waits until name's row of `cotal ps` satisfies cond, and returns it.
func awaitAgent(t *testing.T, bin, mesh, name, what string, cond func(admin.AgentInfo) bool) admin.AgentInfo {
	t.Helper()
	var last admin.AgentInfo
	await.True(t, 60*time.Second, name+" "+what, func() bool {
		a, ok := psAgent(t, bin, mesh, name)
		last = a
		return ok && cond(a)
	})
	return last
}

// running says whether pid is a process that has not exited: an exited child nobody waited
// for yet (a zombie, Z) is gone as far as a supervisor is concerned.
func running(pid int) bool {
	st, ok := procstat.Read(pid)
	return ok && st.State != 'Z'
}

// groupRunning lists the processes of the group pgid that have not exited.
func groupRunning(pgid int) []int {
	var out []int
	for pid, st := range procstat.All() {
		if st.Pgrp == pgid && st.State != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// runningOf is those of pids that still run.
func runningOf(pids ...int) []int {
	var out []int
	for _, p := range pids {
		if running(p) {
			out = append(out, p)
		}
	}
	return out
}

// awaitGone waits until left lists no process. A SIGKILL is delivered, not yet acted on, when
// kill(2) returns, so a process is given a moment to be gone.
func awaitGone(t *testing.T, what string, left func() []int) {
	t.Helper()
	if !await.Until(10*time.Second, func() bool { return len(left()) == 0 }) {
		t.Errorf("%s: still running %v", what, left())
	}
}

// readPID waits for the pid a runtime wrote to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	await.True(t, 60*time.Second, "the runtime's child pid in "+path, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	})
	return pid
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestSupervisorRunsAnAgentThenStopsItAndRevokes starts the cotal binary's own `tail` as the
// agent of an agent file: ps shows it running and online, logs shows what it printed (escapes
// made visible), and stop ends its process group and revokes its credential.
func TestSupervisorRunsAnAgentThenStopsItAndRevokes(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	writeAgentFile(t, project, "worker", workerFile)
	out, stderr, code := runIn(t, bin, project, nil, "start", "worker", "--dir", mesh, "--", bin, "tail", "general")
	if code != 0 || !strings.Contains(out, "started worker") {
		t.Fatalf("start: exit %d: %s%s", code, out, stderr)
	}
	a := awaitAgent(t, bin, mesh, "worker", "running and online", func(a admin.AgentInfo) bool {
		return a.State == admin.AgentRunning && a.Presence == admin.PresenceOnline && a.PID > 0
	})
	if a.Space != "main" || a.Restarts != 0 || a.Started.IsZero() {
		t.Errorf("ps row %+v: want space main, no restarts, a start time", a)
	}
	table, _, _ := runCotal(t, bin, "ps", "--dir", mesh)
	for _, want := range []string{"NAME", "PRESENCE", "worker", "running", "online", strconv.Itoa(a.PID)} {
		if !strings.Contains(table, want) {
			t.Errorf("ps table lacks %q:\n%s", want, table)
		}
	}

	t.Run("its files are private", func(t *testing.T) {
		state := filepath.Join(mesh, "spawn", "main", "worker")
		for path, want := range map[string]os.FileMode{
			filepath.Join(mesh, supervisor.StateFile): 0o600, filepath.Join(state, "output.log"): 0o600,
			filepath.Join(state, "worker.creds"): 0o600, state: 0o700, filepath.Join(mesh, "spawn"): 0o700,
		} {
			if got := mode(t, path); got != want {
				t.Errorf("%s has mode %04o, want %04o", path, got, want)
			}
		}
	})

	t.Run("logs prints its output with terminal escapes made visible", func(t *testing.T) {
		if _, stderr, code := runCotal(t, bin, "send", "--dir", mesh, "--create", "general", "hello worker \x1b[2J"); code != 0 {
			t.Fatalf("send: exit %d: %s", code, stderr)
		}
		var logs string
		await.True(t, 60*time.Second, "the message in worker's logs", func() bool {
			logs, _, _ = runCotal(t, bin, "logs", "worker", "--dir", mesh, "-n", "5")
			return strings.Contains(logs, "hello worker")
		})
		if strings.Contains(logs, "\x1b") || !strings.Contains(logs, `\x1b[2J`) {
			t.Errorf("logs printed a raw escape, or none made visible:\n%q", logs)
		}
		if one, _, _ := runCotal(t, bin, "logs", "worker", "--dir", mesh, "-n", "1"); strings.Count(one, "\n") != 1 {
			t.Errorf("logs -n 1 printed %q", one)
		}
	})

	out, stderr, code = runCotal(t, bin, "stop", "worker", "--dir", mesh)
	if code != 0 || !strings.Contains(out, "stopped worker") {
		t.Fatalf("stop: exit %d: %s%s", code, out, stderr)
	}
	awaitGone(t, "the agent's process group after stop", func() []int { return groupRunning(a.PID) })
	checkRevoked(t, bin, mesh, a.ID)
	if _, ok := psAgent(t, bin, mesh, "worker"); ok {
		t.Errorf("ps still lists worker after stop")
	}
	if _, err := os.Stat(filepath.Join(mesh, supervisor.StateFile)); !os.IsNotExist(err) {
		t.Errorf("%s is left with no agent running: %v", supervisor.StateFile, err)
	}
}

// TestSupervisorRestartsACrashingAgentThenFailsIt runs a runtime that exits 3 at once: it is
// restarted with backoff, its restarts counted, until the fifth crash makes it failed and
// revokes its credential.
func TestSupervisorRestartsACrashingAgentThenFailsIt(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	writeAgentFile(t, project, "worker", workerFile)
	if out, stderr, code := runIn(t, bin, project, nil, "start", "worker", "--dir", mesh, "--",
		"sh", "-c", "echo crashing; exit 3"); code != 0 {
		t.Fatalf("start: exit %d: %s%s", code, out, stderr)
	}
	seen := map[int]bool{}
	sawRestarting := false
	a := awaitAgent(t, bin, mesh, "worker", "failed", func(a admin.AgentInfo) bool {
		seen[a.Restarts] = true
		sawRestarting = sawRestarting || a.State == admin.AgentRestarting
		return a.State == admin.AgentFailed
	})
	if a.Restarts != supervisor.MaxCrashes-1 || len(seen) < 3 || !sawRestarting {
		t.Errorf("failed with %d restarts, restart counts seen %v, restarting seen %v; want %d restarts, growing",
			a.Restarts, seen, sawRestarting, supervisor.MaxCrashes-1)
	}
	if !strings.Contains(a.ExitStatus, "exit status 3") || a.LastLine != "crashing" || a.PID != 0 {
		t.Errorf("failed row %+v: want exit status 3, last line crashing, no pid", a)
	}
	checkRevoked(t, bin, mesh, a.ID)
	logs, _, _ := runCotal(t, bin, "logs", "worker", "--dir", mesh, "-n", "100")
	if n := strings.Count(logs, "crashing"); n != supervisor.MaxCrashes {
		t.Errorf("logs show %d runs, want %d:\n%s", n, supervisor.MaxCrashes, logs)
	}
	if _, stderr, code := runCotal(t, bin, "stop", "worker", "--dir", mesh); code != 0 {
		t.Errorf("stop of a failed agent: exit %d: %s", code, stderr)
	}
}

// TestSupervisorStopEndsTheWholeTree runs runtimes that start a child: whether the runtime
// waits on it, ignores SIGTERM, or exits and leaves it, nothing of its tree is left once the
// agent ends, and its credential is revoked.
func TestSupervisorStopEndsTheWholeTree(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	tests := []struct {
		name, agent, script string
		stop                bool   // cotal stop ends it; otherwise it exits by itself
		state               string // its state after, "" for none (gone from ps)
	}{
		{"a shell waiting on its child is stopped", "waiter", "sleep 300 & echo $! > PID; wait", true, ""},
		{"a runtime ignoring SIGTERM is killed after the grace", "deaf", "trap '' TERM; sleep 300 & echo $! > PID; wait", true, ""},
		{"a child left by a runtime that exited 0 is killed", "leaver", "sleep 300 & echo $! > PID; sleep 1; exit 0", false, admin.AgentExited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeAgentFile(t, project, tt.agent, strings.ReplaceAll(workerFile, "name: worker", "name: "+tt.agent))
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			if out, stderr, code := runIn(t, bin, project, nil, "start", tt.agent, "--dir", mesh, "--",
				"sh", "-c", strings.ReplaceAll(tt.script, "PID", pidFile)); code != 0 {
				t.Fatalf("start: exit %d: %s%s", code, out, stderr)
			}
			child := readPID(t, pidFile)
			a, _ := psAgent(t, bin, mesh, tt.agent)
			if tt.stop {
				if !running(child) || !running(a.PID) {
					t.Fatalf("the runtime %d or its child %d is not running", a.PID, child)
				}
				if _, stderr, code := runCotal(t, bin, "stop", tt.agent, "--dir", mesh); code != 0 {
					t.Fatalf("stop: exit %d: %s", code, stderr)
				}
			} else {
				awaitAgent(t, bin, mesh, tt.agent, tt.state, func(a admin.AgentInfo) bool { return a.State == tt.state })
			}
			awaitGone(t, "the runtime and its child", func() []int { return runningOf(a.PID, child) })
			checkRevoked(t, bin, mesh, a.ID)
			if got, ok := psAgent(t, bin, mesh, tt.agent); got.State != tt.state || ok != (tt.state != "") {
				t.Errorf("ps shows %+v (listed %v), want state %q", got, ok, tt.state)
			}
		})
	}
}

// TestSupervisorReapsWhatAKilledMeshLeft kills `cotal up` with SIGKILL while it supervises an
// agent whose runtime has a child, then starts it again on the same directory: the old group
// is killed, the credential revoked, and the log names the agent reaped.
func TestSupervisorReapsWhatAKilledMeshLeft(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh)
	writeAgentFile(t, project, "worker", workerFile)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	if out, stderr, code := runIn(t, bin, project, nil, "start", "worker", "--dir", mesh, "--",
		"sh", "-c", "sleep 300 & echo $! > "+pidFile+"; exec "+bin+" tail general"); code != 0 {
		t.Fatalf("start: exit %d: %s%s", code, out, stderr)
	}
	child := readPID(t, pidFile)
	a := awaitAgent(t, bin, mesh, "worker", "online", func(a admin.AgentInfo) bool { return a.Presence == admin.PresenceOnline })
	if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = up.cmd.Wait()
	if !running(child) {
		t.Fatalf("the runtime's child %d did not outlive the killed mesh; nothing to reap", child)
	}
	started := time.Now()
	again := startUp(t, bin, mesh)
	await.True(t, 60*time.Second, "the reap's log line", func() bool {
		return strings.Contains(again.out.String(), "reaped an agent the last supervisor left")
	})
	t.Logf("from the second up's start to its banner, past the reap: %v", time.Since(started).Round(time.Millisecond))
	if line := lineWith(again.out.String(), "reaped an agent"); !strings.Contains(line, "name=worker") || !strings.Contains(line, "killed=true") {
		t.Errorf("the reap's log line does not name worker as killed: %s", line)
	}
	awaitGone(t, "the old group after the reap", func() []int { return append(groupRunning(a.PID), runningOf(child)...) })
	checkRevoked(t, bin, mesh, a.ID)
	if _, err := os.Stat(filepath.Join(mesh, supervisor.StateFile)); !os.IsNotExist(err) {
		t.Errorf("%s is left after the reap: %v", supervisor.StateFile, err)
	}
	if list := psAgents(t, bin, mesh); len(list) != 0 {
		t.Errorf("ps after the restart lists %+v; a reaped agent is not restarted", list)
	}
}

// TestSupervisorStopsItsAgentsWithTheMesh interrupts `cotal up` while it supervises an agent
// whose runtime has a child: the mesh stops the whole tree and revokes the credential before
// it exits cleanly.
func TestSupervisorStopsItsAgentsWithTheMesh(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh)
	writeAgentFile(t, project, "worker", workerFile)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	if out, stderr, code := runIn(t, bin, project, nil, "start", "worker", "--dir", mesh, "--",
		"sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait"); code != 0 {
		t.Fatalf("start: exit %d: %s%s", code, out, stderr)
	}
	child := readPID(t, pidFile)
	a, _ := psAgent(t, bin, mesh, "worker")
	up.stop(t)
	awaitGone(t, "the runtime and its child after the mesh stopped", func() []int { return runningOf(a.PID, child) })
	checkRevoked(t, bin, mesh, a.ID) // read from the key store: no mesh runs
	if !strings.Contains(up.out.String(), "supervised agent ended, credential revoked") {
		t.Errorf("the mesh's log does not say the agent ended:\n%s", up.out.String())
	}
}

// lineWith is the first line of text containing s.
func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestSupervisorRefusesWhatItMustNot asks a mesh that runs an agent for what it must refuse;
// each refusal says what to do instead.
func TestSupervisorRefusesWhatItMustNot(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	startUp(t, bin, mesh)
	writeAgentFile(t, project, "worker", workerFile)
	writeAgentFile(t, project, "loud", "---\nname: loud\nallowPublish: [\">\"]\n---\n")
	if _, stderr, code := runIn(t, bin, project, nil, "start", "worker", "--dir", mesh, "--", "sleep", "300"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, stderr)
	}
	t.Cleanup(func() { runCotal(t, bin, "stop", "worker", "--dir", mesh) })
	noMesh := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a name that leaves the directory", []string{"start", "../x", "--dir", mesh, "--", "true"}, `name "../x"`},
		{"a second start of a supervised agent", []string{"start", "worker", "--dir", mesh, "--", "true"},
			"the agent is already supervised: worker in space main; `cotal stop worker --space main` stops it"},
		{"a spawn of a supervised agent", []string{"spawn", "worker", "--dir", mesh, "--", "true"}, "the agent is already active"},
		{"a file granting every channel", []string{"start", "loud", "--dir", mesh, "--", "true"}, "or pass --allow-any-channel"},
		{"a stop of an unknown agent", []string{"stop", "nobody", "--dir", mesh},
			"no supervised agent nobody in space main; `cotal ps` lists them"},
		{"the logs of an unknown agent", []string{"logs", "nobody", "--dir", mesh}, "`cotal ps` lists them"},
		{"an unknown space", []string{"start", "worker", "--space", "elsewhere", "--dir", mesh, "--", "true"}, "elsewhere"},
		{"ps without a mesh", []string{"ps", "--dir", noMesh}, "no cotal mesh is running on " + noMesh + ": start one with `cotal up`"},
		{"start without a mesh", []string{"start", "worker", "--dir", noMesh, "--", "true"}, "start one with `cotal up`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runIn(t, bin, project, nil, tt.args...)
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Errorf("cotal %q: exit %d, stderr:\n%s\nwant a refusal with %q", tt.args, code, stderr, tt.want)
			}
		})
	}
	if list := psAgents(t, bin, mesh); len(list) != 1 || list[0].Name != "worker" || list[0].State != admin.AgentRunning {
		t.Errorf("after the refusals ps lists %+v; want worker alone, running", list)
	}
}

package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/launch"
)

// stateStarting is an agent reserved by Start and not yet running; List leaves it out.
const stateStarting = "starting"

// outputDrain bounds the wait for a runtime's output once its group is gone: a process that
// left the group (setsid) may hold the pipe open.
const outputDrain = 2 * time.Second

// maxLine bounds the last output line kept in memory.
const maxLine = 4096

// agent is one supervised runtime. Its loop goroutine owns the process; Stop and Close ask it
// to end through stop.
type agent struct {
	sup     *Supervisor
	key     key
	workDir string
	command []string
	req     admin.AgentStart // what Start was asked, for the manager service
	prep    *launch.Agent    // set by Start before listed; read-only after
	logPath string
	listed  bool // Start ran it: List, Stop, Logs and StateFile see it; guarded by Supervisor.mu

	stop     chan struct{} // closed to ask the loop to stop the runtime and end
	stopOnce sync.Once
	done     chan struct{} // closed when the loop has ended and revoked

	mu         sync.Mutex // guards the fields below
	state      string
	pid        int
	startTicks uint64
	started    time.Time
	restarts   int
	crashes    []time.Time
	lastLine   string
	exitStatus string
	revoked    bool
}

// run is one run of the runtime.
type run struct {
	cmd    *exec.Cmd
	pid    int
	copied chan struct{} // closed when its output is all copied
	pipe   *os.File      // the read end, closed by the copier
}

func (a *agent) requestStop() { a.stopOnce.Do(func() { close(a.stop) }) }

// ended says whether the agent's runtime ended for good (exited, failed) or is ending.
func (a *agent) ended() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state == admin.AgentExited || a.state == admin.AgentFailed
}

// spawn starts the runtime in a process group of its own, its stdin /dev/null and its output
// appended to logPath through a pipe the supervisor copies.
func (a *agent) spawn() (*run, error) {
	out, err := openLog(a.logPath)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		out.Close()
		return nil, err
	}
	argv := a.prep.Argv()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = a.workDir
	cmd.Env = append(os.Environ(), a.prep.Env()...)
	cmd.Stdout, cmd.Stderr = w, w // files: the runtime writes the pipe itself, exec copies nothing
	cmd.SysProcAttr = groupAttr()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		out.Close()
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	rn := &run{cmd: cmd, pid: cmd.Process.Pid, copied: make(chan struct{}), pipe: r}
	go func() {
		defer close(rn.copied)
		defer out.Close()
		defer r.Close()
		a.copyOutput(r, out)
	}()
	a.mu.Lock()
	a.state, a.pid, a.started = admin.AgentRunning, rn.pid, time.Now()
	a.startTicks = startTime(rn.pid)
	a.mu.Unlock()
	return rn, nil
}

// maxLog is the size past which a run's output file is moved to output.log.1 (replacing the
// one before) when the next run starts, so a crash loop cannot fill the disk with old runs.
const maxLog = 16 << 20

// openLog opens the output file for appending, 0600 whatever it was.
func openLog(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > maxLog {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// copyOutput appends r to out and keeps the last complete, non-empty line.
func (a *agent) copyOutput(r io.Reader, out io.Writer) {
	buf := make([]byte, 32<<10)
	var line []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = out.Write(buf[:n])
			for _, b := range buf[:n] {
				switch {
				case b == '\n':
					a.keepLine(line)
					line = line[:0]
				case len(line) < maxLine:
					line = append(line, b)
				}
			}
		}
		if err != nil {
			a.keepLine(line)
			return
		}
	}
}

func (a *agent) keepLine(line []byte) {
	s := strings.TrimRight(string(line), "\r")
	if strings.TrimSpace(s) == "" {
		return
	}
	a.mu.Lock()
	a.lastLine = s
	a.mu.Unlock()
}

// loop waits for each run to end, restarts a crashed runtime after its backoff, and ends the
// agent (revoking its credential) when it exits 0, fails, or is told to stop.
func (a *agent) loop(rn *run) {
	defer close(a.done)
	for {
		err, stopped := a.wait(rn)
		if stopped {
			a.end("", "stopped")
			return
		}
		if err == nil {
			a.end(admin.AgentExited, "exit status 0")
			return
		}
		for {
			if a.crashed(err) {
				a.end(admin.AgentFailed, fmt.Sprintf("%d crashes within %v", MaxCrashes, CrashWindow))
				return
			}
			if !a.backoff() {
				a.end("", "stopped")
				return
			}
			if rn, err = a.spawn(); err == nil {
				break
			}
		}
		a.mu.Lock()
		a.restarts++
		a.mu.Unlock()
		a.sup.save()
		a.sup.opts.Log.Info("restarted a supervised agent", "space", a.key.space, "name", a.key.name, "pid", rn.pid)
	}
}

// wait waits for rn's runtime to exit, or for a stop, which it carries out: SIGTERM to the
// group, SIGKILL after StopGrace. Either way what is left of the group is killed and the
// output copied before it returns.
func (a *agent) wait(rn *run) (err error, stopped bool) {
	exited := make(chan error, 1)
	go func() { exited <- rn.cmd.Wait() }()
	select {
	case err = <-exited:
	case <-a.stop:
		stopped = true
		a.setState(admin.AgentStopping)
		a.signal(rn, syscall.SIGTERM)
		grace := time.NewTimer(StopGrace)
		select {
		case err = <-exited:
			grace.Stop()
		case <-grace.C:
			a.signal(rn, syscall.SIGKILL)
			err = <-exited
		}
	}
	// The leader is gone; its group's id is not reused while members are left, so this
	// reaches only the children it left behind.
	_ = signalGroup(rn.pid, syscall.SIGKILL)
	select {
	case <-rn.copied:
	case <-time.After(outputDrain):
		rn.pipe.Close()
		<-rn.copied
	}
	a.mu.Lock()
	a.pid = 0
	if err != nil {
		a.exitStatus = exitStatus(err)
	}
	a.mu.Unlock()
	select {
	case <-a.stop:
		stopped = true // asked while it exited by itself
	default:
	}
	return err, stopped
}

// signal sends sig to rn's process group, or to its leader where there are no groups.
func (a *agent) signal(rn *run, sig syscall.Signal) {
	if err := signalGroup(rn.pid, sig); err != nil {
		_ = rn.cmd.Process.Signal(sig)
	}
}

// exitStatus says how a run ended.
func exitStatus(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ProcessState.String()
	}
	return err.Error()
}

// crashed records a crash and says whether it makes the agent failed.
func (a *agent) crashed(err error) bool {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exitStatus = exitStatus(err)
	recent := a.crashes[:0]
	for _, t := range a.crashes {
		if now.Sub(t) < CrashWindow {
			recent = append(recent, t)
		}
	}
	a.crashes = append(recent, now)
	a.sup.opts.Log.Warn("a supervised agent crashed", "space", a.key.space, "name", a.key.name,
		"status", a.exitStatus, "crashes", len(a.crashes))
	return len(a.crashes) >= MaxCrashes
}

// backoff waits FirstBackoff doubled for each crash in the window but the first, up to
// MaxBackoff; false when a stop came first.
func (a *agent) backoff() bool {
	a.mu.Lock()
	a.state = admin.AgentRestarting
	d := FirstBackoff << (len(a.crashes) - 1)
	a.mu.Unlock()
	a.sup.save()
	t := time.NewTimer(min(d, MaxBackoff))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.stop:
		return false
	}
}

// end revokes the agent's credential and records its final state ("" for one stopped, which
// Stop forgets), then takes it out of StateFile. A credential the mesh could not revoke stays
// listed there, for the next start's Reap.
func (a *agent) end(state, why string) {
	err := a.prep.Revoke()
	a.mu.Lock()
	if state != "" {
		a.state = state
	}
	a.revoked = err == nil
	a.mu.Unlock()
	log := a.sup.opts.Log
	if err != nil {
		log.Error("revoke a supervised agent's credential", "space", a.key.space, "name", a.key.name,
			"id", a.prep.Cred.ID, "err", err)
	}
	log.Info("supervised agent ended, credential revoked", "space", a.key.space, "name", a.key.name,
		"why", why, "id", a.prep.Cred.ID)
	a.sup.save()
}

func (a *agent) setState(s string) {
	a.mu.Lock()
	a.state = s
	a.mu.Unlock()
}

// entry is the agent as StateFile lists it; false once its credential is revoked.
func (a *agent) entry() (entry, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.revoked {
		return entry{}, false
	}
	return entry{Space: a.key.space, Name: a.key.name, PID: a.pid, PGID: a.pid, StartTime: a.startTicks,
		Credential: a.prep.Cred.ID}, true
}

// info is the agent as `cotal ps` shows it.
func (a *agent) info(presence func(spaceName, id string) string) admin.AgentInfo {
	a.mu.Lock()
	i := admin.AgentInfo{Space: a.key.space, Name: a.key.name, ID: a.prep.Cred.ID, PID: a.pid, State: a.state,
		Command: a.command, Restarts: a.restarts, LastLine: a.lastLine, Log: a.logPath, ExitStatus: a.exitStatus,
		Presence: admin.PresenceUnknown, SpawnedBy: a.req.SpawnedBy}
	if a.pid != 0 {
		i.Started = a.started
	}
	a.mu.Unlock()
	if presence != nil {
		i.Presence = presence(i.Space, i.ID)
	}
	return i
}

// splitLines splits text into lines without their ends, the last one kept only when not
// empty.
func splitLines(text string) []string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{}
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	return lines
}

package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/wire"
)

// meshProc is a `cotal up` subprocess on one data directory. Every restart reuses the
// directory and the TCP port, so connected endpoints find the mesh where they left it.
type meshProc struct {
	t      *testing.T
	bin    string
	dir    string
	wrap   []string // command prefix that runs the binary, if any (ip netns exec NS)
	extra  []string
	listen string // host:port, fixed by the first start
	out    *testlog.Buffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	banner   *bannerWriter
	link     string
	httpURL  string
	restarts []time.Duration // kill to join link, per restart
}

var (
	linkLine   = regexp.MustCompile(`join link: (cotals?://\S+)`)
	healthLine = regexp.MustCompile(`health:\s+(http://\S+)/healthz`)
)

// startMesh runs `cotal up --sync always` on dir with a free port and waits until it prints its
// join link; extra flags are added to every start. The test's cleanup kills it.
func startMesh(t *testing.T, b bins, dir string, extra ...string) *meshProc {
	t.Helper()
	m := launchMesh(t, b, dir, extra...)
	m.ready()
	return m
}

// launchMesh starts `cotal up` as startMesh does without waiting for its join link: a cluster
// node prints it only once the other nodes are up. ready waits for it.
func launchMesh(t *testing.T, b bins, dir string, extra ...string) *meshProc {
	t.Helper()
	m := &meshProc{t: t, bin: b.cotal, dir: dir, extra: extra, listen: "127.0.0.1:0", out: &testlog.Buffer{}}
	t.Cleanup(m.kill)
	m.launch()
	return m
}

// launchMeshAt is launchMesh on the client address listen, run through the command prefix
// wrap (`ip netns exec NS`, which execs the binary, so a signal to the process reaches it).
func launchMeshAt(t *testing.T, b bins, dir, listen string, wrap []string, extra ...string) *meshProc {
	t.Helper()
	m := &meshProc{t: t, bin: b.cotal, dir: dir, wrap: wrap, extra: extra, listen: listen, out: &testlog.Buffer{}}
	t.Cleanup(m.kill)
	m.launch()
	return m
}

// start launches one incarnation and waits for its join link (and health URL with --http).
func (m *meshProc) start() {
	m.t.Helper()
	m.launch()
	m.ready()
}

// launch starts one incarnation; ready waits for its banner.
func (m *meshProc) launch() {
	m.t.Helper()
	args := append([]string{m.bin, "up", "--dir", m.dir, "--listen", m.listen, "--sync", "always"}, m.extra...)
	args = append(slices.Clone(m.wrap), args...)
	cmd := exec.Command(args[0], args[1:]...)
	banner := &bannerWriter{out: m.out, ready: make(chan [2]string, 1)}
	cmd.Stdout, cmd.Stderr = banner, m.out
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("start cotal up: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited, m.banner, m.link, m.httpURL = cmd, exited, banner, "", ""
	m.mu.Unlock()
}

// ready waits until the incarnation launch started prints its join link, and fixes the
// client port of later incarnations to the first one's.
func (m *meshProc) ready() {
	m.t.Helper()
	m.mu.Lock()
	cmd, exited, banner := m.cmd, m.exited, m.banner
	m.mu.Unlock()
	select {
	case got := <-banner.ready:
		m.mu.Lock()
		m.link, m.httpURL = got[0], got[1]
		m.mu.Unlock()
	case <-exited:
		m.t.Fatalf("cotal up exited before it was ready; output:\n%s", tail(m.out.String(), 4000))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		m.t.Fatalf("cotal up printed no join link within 60s; output:\n%s", tail(m.out.String(), 4000))
	}
	if m.listen != "127.0.0.1:0" {
		return
	}
	l, err := wire.ParseLink(m.Link())
	if err != nil {
		m.t.Fatalf("cotal up printed an invalid join link %q: %v", m.Link(), err)
	}
	m.listen = net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// bannerWriter is the stdout of `cotal up`: it keeps the output and reports the join link
// and the health URL once the banner is complete.
type bannerWriter struct {
	out          *testlog.Buffer
	partial      []byte
	link, health string
	ready        chan [2]string
}

func (w *bannerWriter) Write(p []byte) (int, error) {
	_, _ = w.out.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if g := linkLine.FindStringSubmatch(line); g != nil {
			w.link = g[1]
		}
		if g := healthLine.FindStringSubmatch(line); g != nil {
			w.health = g[1]
		}
		if strings.HasPrefix(line, "press Ctrl-C") && w.link != "" {
			w.ready <- [2]string{w.link, w.health}
		}
	}
}

// kill sends SIGKILL, as a crash or the OOM killer would, and waits for the process to die.
func (m *meshProc) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// restart kills the mesh and starts it again on the same directory and port; it returns
// how long the mesh was gone, kill to join link.
func (m *meshProc) restart() time.Duration {
	m.t.Helper()
	begin := time.Now()
	m.kill()
	m.start()
	d := time.Since(begin)
	m.mu.Lock()
	m.restarts = append(m.restarts, d)
	m.mu.Unlock()
	return d
}

// Link is the join link of space main.
func (m *meshProc) Link() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.link
}

// HTTP is the health and monitoring URL of the current incarnation (with --http).
func (m *meshProc) HTTP() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.httpURL
}

// minted is an agent credential written by `cotal auth mint`.
type minted struct {
	ID, Name, Creds string
}

// mintCLI mints an agent credential with `cotal auth mint` (through the running mesh, or
// straight in the key store when none runs: the mesh then provisions it at its next start;
// --init lets the first mint create the key store before any mesh ran on dir).
func mintCLI(t *testing.T, b bins, dir, name string, flags ...string) minted {
	t.Helper()
	creds := filepath.Join(dir, name+".creds")
	args := append([]string{"auth", "mint", "--dir", dir, "--init", "--name", name, "--no-expiry", "--out", creds, "--json"}, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.cotal, args...)
	var stderr testlog.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cotal auth mint %s: %v: %s", name, err, stderr.String())
	}
	var got struct{ ID string }
	if err := json.Unmarshal(out, &got); err != nil || got.ID == "" {
		t.Fatalf("cotal auth mint %s printed %q: %v", name, out, err)
	}
	return minted{ID: got.ID, Name: name, Creds: creds}
}

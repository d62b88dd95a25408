package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cotal-go/cotal/bench"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// benchSpace is the space the bench's remote mesh provisions, the bench's own.
const benchSpace = "main"

// remoteStartBudget bounds the start of a remote mesh, from exec to its link.
const remoteStartBudget = time.Minute

// remoteMesh is `cotal up` run by this binary in a process of its own on a temporary data
// directory, as the bench's path workload needs: its agents reach it over TCP with credentials
// it mints through its admin socket.
type remoteMesh struct {
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	client *admin.Client
	link   string
}

// startRemoteMesh starts `cotal up` of this binary; see startRemoteMeshOf.
func startRemoteMesh(ctx context.Context, o bench.RemoteOptions) (bench.Remote, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the cotal binary to run `cotal up`: %w", err)
	}
	return startRemoteMeshOf(ctx, exe, o)
}

// startRemoteMeshOf starts `exe up` on a fresh directory and a free loopback port, and
// returns once its admin socket answers with the space's link. Its log goes to up.log there.
func startRemoteMeshOf(ctx context.Context, exe string, o bench.RemoteOptions) (bench.Remote, error) {
	dir, err := os.MkdirTemp("", "cotal-bench-up-")
	if err != nil {
		return nil, err
	}
	addr, err := freeLoopback()
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	logf, err := os.Create(filepath.Join(dir, "up.log"))
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	defer logf.Close()
	r := &remoteMesh{dir: dir, exited: make(chan struct{})}
	r.cmd = exec.Command(exe, "up", "--dir", dir, "--listen", addr, "--sync", o.Sync,
		"--space", benchSpace, "--log-level", "warn")
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("start `cotal up`: %w", err), os.RemoveAll(dir))
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	ctx, cancel := context.WithTimeout(ctx, remoteStartBudget)
	defer cancel()
	if err := r.await(ctx); err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return r, nil
}

// await waits for the mesh's admin socket and link, or its exit.
func (r *remoteMesh) await(ctx context.Context) error {
	for {
		c, err := admin.Dial(ctx, r.dir)
		if err == nil {
			if r.link, err = c.Link(ctx, benchSpace); err == nil {
				r.client = c
				return nil
			}
		}
		select {
		case <-r.exited:
			log, _ := os.ReadFile(filepath.Join(r.dir, "up.log"))
			return fmt.Errorf("`cotal up` exited at start: %s", log)
		case <-ctx.Done():
			return fmt.Errorf("`cotal up` on %s did not answer: %w (last: %v)", r.dir, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeLoopback is a loopback address whose port was free a moment ago.
func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (r *remoteMesh) Link() string { return r.link }

func (r *remoteMesh) PID() int { return r.cmd.Process.Pid }

func (r *remoteMesh) Mint(ctx context.Context, name, role string, channels []string) ([]byte, string, error) {
	cred, err := r.client.Mint(ctx, admin.MintSpec{Space: benchSpace, Name: name, Profile: wire.ProfileAgent,
		Role: role, Subscribe: channels, AllowPublish: channels})
	if err != nil {
		return nil, "", fmt.Errorf("mint %s: %w", name, err)
	}
	return cred.Creds, cred.ID, nil
}

func (r *remoteMesh) SetLive(ctx context.Context, channel string) error {
	live := wire.DeliveryLive
	_, err := r.client.SetChannel(ctx, benchSpace, space.ChannelUpdate{Channel: channel, DeliveryClass: &live, Create: true})
	return err
}

func (r *remoteMesh) Drained(ctx context.Context, id string, anycast bool) (bool, error) {
	b, err := r.client.Pending(ctx, benchSpace, id)
	if err != nil {
		return false, err
	}
	q := b.DM
	if anycast {
		if b.Anycast == nil {
			return false, fmt.Errorf("%s holds no role", id)
		}
		q = *b.Anycast
	}
	return q.Pending == 0 && q.AckPending == 0, nil
}

// Close stops the mesh as an operator does, with SIGTERM, kills it if it has not exited
// after closeGrace, and removes its directory.
func (r *remoteMesh) Close() error {
	const closeGrace = 30 * time.Second
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(closeGrace):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	return os.RemoveAll(r.dir)
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// startWait bounds how long a command waits for a mesh that holds the key store but does not
// answer on its admin socket yet: one starting up, or shutting down.
const startWait = 10 * time.Second

// storePoll is how long each look at a locked key store waits for its lock.
const storePoll = 100 * time.Millisecond

// localMesh is the admin client of the mesh on the data directory the command's flags and
// configuration name (meshClient of dataDir).
func localMesh(cmd *cobra.Command) (*admin.Client, error) {
	dir, err := dataDir(cmd)
	if err != nil {
		return nil, err
	}
	return meshClient(cmd, dir)
}

// meshClient is the admin client of the mesh running on dir. While another process holds the
// key store and no socket answers, it waits for a starting mesh (telling stderr once);
// with no mesh at all it is errNoMesh with what to do.
func meshClient(cmd *cobra.Command, dir string) (*admin.Client, error) {
	c, _, err := reachDir(cmd, dir, false)
	return c, err
}

// withMeshOrStore runs onMesh against the mesh serving dir, or onStore on dir's key store
// when no mesh runs there, waiting as meshClient does while the store is locked.
func withMeshOrStore(cmd *cobra.Command, dir string, onMesh func(*admin.Client) error, onStore func(*provisioner.Store) error) error {
	c, store, err := reachDir(cmd, dir, true)
	if err != nil {
		return err
	}
	if c != nil {
		return withHint(onMesh(c))
	}
	return errors.Join(withHint(onStore(store)), store.Close())
}

// withMeshOrExistingStore is withMeshOrStore for a command that only reads or changes what a
// mesh or a mint left in dir (auth list, auth revoke): a directory with neither a key store
// nor an admin socket is errNoMeshData, and nothing is created in it.
func withMeshOrExistingStore(cmd *cobra.Command, dir, spaceName string, onMesh func(*admin.Client) error, onStore func(*provisioner.Store) error) error {
	if err := checkMeshData(dir); err != nil {
		return err
	}
	return withMeshOrStore(cmd, dir, onMesh, func(s *provisioner.Store) error {
		err := onStore(s)
		if errors.Is(err, provisioner.ErrUnknownSpace) {
			return fmt.Errorf("%w %q: the key store in %s has no such space; `cotal up --dir %s --space %s` provisions it",
				provisioner.ErrUnknownSpace, spaceName, dir, dir, spaceName)
		}
		return err
	})
}

// checkMeshData is errNoMeshData unless dir holds a key store, or the admin socket of a mesh
// that may be creating one.
func checkMeshData(dir string) error {
	for _, name := range []string{provisioner.KeysFile, admin.SocketName} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	return fmt.Errorf("%w in %s: start `cotal up --dir %s` first, or check --dir", errNoMeshData, dir, dir)
}

// reachDir finds what serves dir: the admin socket of a running mesh, or else (with
// wantStore) the key store itself, opened. A store another process holds is a mesh starting
// or stopping, so it polls both until startWait passes.
func reachDir(cmd *cobra.Command, dir string, wantStore bool) (*admin.Client, *provisioner.Store, error) {
	ctx := cmd.Context()
	if wantStore {
		// Without a mesh the key store is opened in place: the directory must be the user's.
		if err := warnSecureDir(cmd, dir); err != nil {
			return nil, nil, err
		}
	}
	deadline := time.Now().Add(startWait)
	told := false
	for {
		c, err := admin.Dial(ctx, dir)
		switch {
		case err == nil:
			if err := checkAnswers(cmd, c, dir); err != nil {
				return nil, nil, err
			}
			return c, nil, nil
		case errors.Is(err, admin.ErrUnsafeSocket):
			// A planted socket is an attack, not an absent mesh: going on to the key store
			// would hide it.
			return nil, nil, err
		}
		store, err := openStore(dir, wantStore)
		switch {
		case err == nil && wantStore:
			return nil, store, nil
		case err == nil:
			return nil, nil, noMesh(dir, store.Close())
		case errors.Is(err, errNoMesh):
			return nil, nil, err
		case !errors.Is(err, provisioner.ErrLocked):
			return nil, nil, err
		}
		if !told {
			fmt.Fprintf(cmd.ErrOrStderr(), "waiting up to %v for the mesh starting on %s (it holds the key store)\n", startWait, dir)
			told = true
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("%w; no mesh answered on %s within %v: if no `cotal up` runs there, another cotal command holds it",
				err, filepath.Join(dir, admin.SocketName), startWait)
		}
		if err := retry.Sleep(ctx, storePoll); err != nil {
			return nil, nil, err
		}
	}
}

// Bounds of the ping that tells a mesh that is there from one that answers nothing: a mesh
// answers it at once, even while it starts, so one that has not answered after answerWarn is
// said to be silent, and after answerWait the command gives up.
const (
	answerWarn = 2 * time.Second
	answerWait = 10 * time.Second
)

// errNotAnswering: the admin socket accepts connections, but the process behind it answers
// nothing, most often a `cotal up` stopped with SIGSTOP or held in a debugger.
var errNotAnswering = errors.New("the mesh is not answering")

// checkAnswers pings the mesh on dir, saying on stderr once answerWarn passes without an
// answer, and fails with errNotAnswering once answerWait does.
func checkAnswers(cmd *cobra.Command, c *admin.Client, dir string) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), answerWait)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Ping(ctx)
		done <- err
	}()
	warn := time.NewTimer(answerWarn)
	defer warn.Stop()
	for {
		select {
		case err := <-done:
			var reply *admin.Error // an error reply is an answer too
			switch {
			case err == nil || errors.As(err, &reply):
				return nil
			case ctx.Err() != nil && cmd.Context().Err() == nil:
				return fmt.Errorf("%w on %s: its admin socket accepted the connection but nothing answered within %v; "+
					"check its `cotal up` process: one stopped (SIGSTOP, Ctrl-Z, a debugger) resumes with `kill -CONT PID`",
					errNotAnswering, dir, answerWait)
			}
			return err
		case <-warn.C:
			fmt.Fprintf(cmd.ErrOrStderr(), "the mesh on %s is not answering; waiting up to %v more (is its `cotal up` stopped?)\n",
				dir, answerWait-answerWarn)
		}
	}
}

// checkNotMember refuses dir when it is the data directory of a cluster node without the key
// store, which keeps a copy of the cluster trust file there and no keys.db: a key store
// created beside the cluster's would mint credentials no node trusts.
func checkNotMember(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, provisioner.KeysFile)); err == nil {
		return nil
	}
	t, err := provisioner.ReadClusterTrust(filepath.Join(dir, space.TrustFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%s is the data directory of a cluster node: %w", dir, space.NoKeyStoreError(t.KeyStoreNode))
}

// openStore opens dir's key store without waiting long for its lock. Without wantStore it
// only probes a store that exists: a command that needs a mesh never creates one. With it,
// it refuses the data directory of a cluster node without the key store (checkNotMember).
func openStore(dir string, wantStore bool) (*provisioner.Store, error) {
	if !wantStore {
		if _, err := os.Stat(filepath.Join(dir, provisioner.KeysFile)); err != nil {
			return nil, noMesh(dir, nil)
		}
	} else if err := checkNotMember(dir); err != nil {
		return nil, err
	}
	opts := provisioner.DefaultOptions()
	opts.LockTimeout = storePoll
	return provisioner.Open(dir, opts)
}

func noMesh(dir string, closeErr error) error {
	return errors.Join(fmt.Errorf("%w on %s: start one with `cotal up`, or pass --dir if it runs on another data directory", errNoMesh, dir), closeErr)
}

// withHint adds to a mesh error the command that helps: the mesh's own sentences speak of
// values, the command line knows its commands and flags.
func withHint(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, space.ErrUnknownInstance):
		return fmt.Errorf("%w; `cotal auth list` shows them", err)
	case errors.Is(err, space.ErrAmbiguousName):
		return fmt.Errorf("%w (pass the id instead)", err)
	case errors.Is(err, provisioner.ErrNameInUse):
		return fmt.Errorf("%w; in `cotal auth mint` that is --identity FILE (the old .creds) to re-mint it, or --replace", err)
	case errors.Is(err, space.ErrUnknownChannel):
		return fmt.Errorf("%w; `cotal channels list` shows the channels", err)
	case errors.Is(err, space.ErrNoSuchSpace):
		return fmt.Errorf("%w; `cotal link` lists them", err)
	case errors.Is(err, space.ErrOpenMode):
		// In the command line's words, without the Go package's prefix ("space: ").
		return reworded{err: err, msg: "the mesh runs in open mode and has no credentials: it was started with " +
			"`cotal up --open`, so there is nothing to mint, list or revoke, and every client connects without a " +
			"credential; credentials are for a mesh started without --open"}
	}
	return err
}

// reworded is err said in the command line's own sentence; errors.Is and errors.As still
// find err.
type reworded struct {
	err error
	msg string
}

func (r reworded) Error() string { return r.msg }
func (r reworded) Unwrap() error { return r.err }

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// userSeed matches an nkey user seed anywhere in a text: "SU" and 56 more base32 characters. A
// bare "SU" is not enough, since a public key contains it by chance.
var userSeed = regexp.MustCompile(`\bSU[A-Z2-7]{56}\b`)

// binDir is the temporary directory buildCotal built the binary in, removed by TestMain.
var binDir string

// TestMain removes the binary the e2e tests built, about 32 MB, when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildCotal builds the binary once per test run; the e2e tests drive it as a user would.
var buildCotal = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "cotal-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "cotal")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/cotal-go/cotal").CombinedOutput()
	if err != nil {
		return "", &buildError{out: out, err: err}
	}
	return bin, nil
})

type buildError struct {
	out []byte
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

func cotalBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the cotal binary; skipped with -short")
	}
	bin, err := buildCotal()
	if err != nil {
		t.Fatalf("build cotal: %v", err)
	}
	return bin
}

// upProcess is a running `cotal up` and the join link it printed.
type upProcess struct {
	cmd   *exec.Cmd
	link  string
	out   *testlog.Buffer
	found chan string // the join link, once the banner prints it
}

var linkLine = regexp.MustCompile(`join link: (cotals?://\S+)`)

// startUp runs `cotal up` on dir with a random port and waits for its join link.
func startUp(t *testing.T, bin, dir string, extra ...string) *upProcess {
	t.Helper()
	p := launchUp(t, bin, dir, extra...)
	p.waitLink(t)
	return p
}

// launchUp runs `cotal up` on dir with a random port; waitLink waits for its join link.
func launchUp(t *testing.T, bin, dir string, extra ...string) *upProcess {
	t.Helper()
	args := append([]string{"up", "--dir", dir, "--listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &upProcess{cmd: cmd, out: &testlog.Buffer{}, found: make(chan string, 1)}
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			p.out.Write([]byte(line + "\n"))
			if m := linkLine.FindStringSubmatch(line); m != nil {
				select {
				case p.found <- m[1]:
				default:
				}
			}
		}
	}()
	return p
}

// waitLink waits for the join link p's banner prints.
func (p *upProcess) waitLink(t *testing.T) {
	t.Helper()
	select {
	case p.link = <-p.found:
	case <-time.After(60 * time.Second):
		t.Fatalf("cotal up printed no join link within 60s; output:\n%s", p.out)
	}
}

// stop sends SIGINT and expects a clean exit.
func (p *upProcess) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("cotal up exited with %v after SIGINT; output:\n%s", err, p.out)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("cotal up did not stop within 30s of SIGINT")
	}
}

func runCotal(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCotalEnv(t, bin, nil, args...)
}

// runCotalEnv is runCotal with env added to the test's environment.
func runCotalEnv(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run cotal %v: %v", args, err)
	}
	return o.String(), e.String(), 0
}

// connectCreds connects over TCP with a .creds file, as a remote agent does.
func connectCreds(link, creds, id string) (*nats.Conn, error) {
	l, err := wire.ParseLink(link)
	if err != nil {
		return nil, err
	}
	return nats.Connect(l.ServerURL(), nats.UserCredentials(creds), nats.MaxReconnects(0),
		nats.CustomInboxPrefix(wire.InboxPrefix(id)), nats.Timeout(5*time.Second))
}

func TestUpAndAuthEndToEnd(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)

	t.Run("a second up on the same directory fails at once with a clear message", func(t *testing.T) {
		_, stderr, code := runCotal(t, bin, "up", "--dir", dir, "--listen", "127.0.0.1:0")
		if code != exitError || !strings.Contains(stderr, "in use by another cotal process") {
			t.Fatalf("exit %d, stderr %q; want exit 1 naming the running process", code, stderr)
		}
	})

	creds := filepath.Join(dir, "alice.creds")
	stdout, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--profile", "agent", "--name", "alice",
		"--subscribe", "general", "--allow-publish", "general", "--out", creds, "--json")
	if code != 0 {
		t.Fatalf("mint while up runs: exit %d: %s", code, stderr)
	}
	var minted struct {
		ID, File string
	}
	if err := json.Unmarshal([]byte(stdout), &minted); err != nil || !strings.HasPrefix(minted.ID, "U") || strings.Contains(stdout, `"creds"`) {
		t.Fatalf("mint --json printed %q (%v); want the id and file, never a creds field", stdout, err)
	}
	t.Run("the creds file is private", func(t *testing.T) {
		fi, err := os.Stat(creds)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("creds mode %v (%v), want 0600", fi.Mode().Perm(), err)
		}
	})
	t.Run("the minted credential connects over TCP and publishes on its channel", func(t *testing.T) {
		nc, err := connectCreds(up.link, creds, minted.ID)
		if err != nil {
			t.Fatalf("connect with minted creds: %v", err)
		}
		defer nc.Close()
		n := wire.NewNames("main")
		msg := wire.CotalMessage{ID: wire.NewMessageID(), TS: time.Now().UnixMilli(), Space: "main",
			From: wire.EndpointRef{ID: minted.ID, Name: "alice"}, Channel: "general",
			Parts: []wire.Part{wire.TextPart("hi")}}
		data, _ := json.Marshal(msg)
		if _, err := nc.Request(n.ChatSubject(minted.ID, "general"), data, 5*time.Second); err != nil {
			t.Fatalf("JetStream publish through the listener: %v", err)
		}
	})
	t.Run("list shows the credential and never its seed", func(t *testing.T) {
		out, _, code := runCotal(t, bin, "auth", "list", "--dir", dir)
		if code != 0 || !strings.Contains(out, minted.ID) || !strings.Contains(out, "active") || userSeed.MatchString(out) {
			t.Fatalf("auth list (exit %d):\n%s", code, out)
		}
	})
	t.Run("mint refuses to overwrite a creds file or write where it cannot, and registers nothing then", func(t *testing.T) {
		before, _ := os.ReadFile(creds)
		_, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "alice2", "--out", creds)
		if code != exitError || !strings.Contains(stderr, creds+" exists; pass --force") {
			t.Fatalf("mint onto an existing file: exit %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(creds); !bytes.Equal(before, after) {
			t.Fatal("the existing creds file changed")
		}
		missing := filepath.Join(dir, "nosuch", "carol.creds")
		_, stderr, code = runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "carol", "--out", missing)
		if code != exitError || !strings.Contains(stderr, "the directory "+filepath.Dir(missing)+" does not exist") || strings.Contains(stderr, ".cotal-") {
			t.Fatalf("mint into a missing directory: exit %d: %s", code, stderr)
		}
		out, _, _ := runCotal(t, bin, "auth", "list", "--dir", dir)
		if strings.Contains(out, "alice2") || strings.Contains(out, "carol") {
			t.Fatalf("a refused mint left a registry entry:\n%s", out)
		}
		forced := filepath.Join(dir, "forced.creds")
		if err := os.WriteFile(forced, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "dave", "--out", forced, "--force"); code != exitOK {
			t.Fatalf("mint --force: exit %d: %s", code, stderr)
		}
		if data, _ := os.ReadFile(forced); !strings.Contains(string(data), "NATS USER JWT") {
			t.Fatalf("--force did not replace the file: %q", data)
		}
	})
	t.Run("a mint whose file cannot be written after the mint revokes the credential", func(t *testing.T) {
		mintOntoALink(t, bin, dir, "erin")
	})
	t.Run("revoke cuts the credential off at once", func(t *testing.T) {
		if _, stderr, code := runCotal(t, bin, "auth", "revoke", "--dir", dir, minted.ID); code != 0 {
			t.Fatalf("revoke: exit %d: %s", code, stderr)
		}
		if nc, err := connectCreds(up.link, creds, minted.ID); err == nil {
			nc.Close()
			t.Fatal("a revoked credential still connects")
		}
	})
	t.Run("up logs the mint and the revocation with the name", func(t *testing.T) {
		out := up.out.String()
		for _, want := range []string{`msg="minted a credential" space=main name=alice profile=agent`, `msg="revoked a credential" space=main name=alice`} {
			if !strings.Contains(out, want) {
				t.Errorf("up's log has no %q:\n%s", want, out)
			}
		}
	})
	up.stop(t)
	if strings.Contains(up.out.String(), "SU") && regexp.MustCompile(`\bSU[A-Z2-7]{50,}`).MatchString(up.out.String()) {
		t.Fatal("cotal up printed a seed")
	}

	t.Run("with no mesh running, a mint whose file cannot be written revokes the credential in the store", func(t *testing.T) {
		mintOntoALink(t, bin, dir, "frank")
	})
	t.Run("mint works with no mesh running and the mesh honours it at the next start", func(t *testing.T) {
		bob := filepath.Join(dir, "bob.creds")
		out, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "bob", "--subscribe", "general", "--out", bob)
		if code != 0 {
			t.Fatalf("offline mint: exit %d: %s", code, stderr)
		}
		id := strings.TrimSpace(out)
		up := startUp(t, bin, dir)
		nc, err := connectCreds(up.link, bob, id)
		if err != nil {
			t.Fatalf("offline-minted credential after restart: %v", err)
		}
		nc.Close()
		up.stop(t)
	})
}

// mintOntoALink mints name with --force onto a planted symlink: the path passes the check
// before the mint (it exists, and --force may replace it), the write after the mint refuses to
// follow the link, so the credential just minted must be revoked, the link's target left alone
// and no active credential of name left behind.
func mintOntoALink(t *testing.T, bin, dir, name string) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, name+".creds")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", name, "--out", link, "--force")
	if code != exitError || !strings.Contains(stderr, "cannot write the credential to "+link) ||
		!strings.Contains(stderr, "the credential was revoked, nothing was minted") {
		t.Fatalf("mint onto a symlink: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(target); string(data) != "untouched" {
		t.Fatalf("the link's target was written: %q", data)
	}
	out, _, _ := runCotal(t, bin, "auth", "list", "--dir", dir, "--all")
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " "+name+" ") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 1 || !strings.Contains(rows[0], "revoked") {
		t.Fatalf("auth list shows %q for %s; want one revoked row:\n%s", rows, name, out)
	}
}

// TestMintAsSoonAsThePortAnswers is the script "start up, mint once the port answers": the
// client listener opens last, so the mint must reach a ready mesh every time.
func TestMintAsSoonAsThePortAnswers(t *testing.T) {
	bin := cotalBin(t)
	for i := range 10 {
		dir, addr := t.TempDir(), spacetest.FreeAddr(t)
		up := exec.Command(bin, "up", "--dir", dir, "--listen", addr)
		out := &testlog.Buffer{}
		up.Stdout, up.Stderr = out, out
		if err := up.Start(); err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		stopUp := func() {
			_ = up.Process.Signal(syscall.SIGINT)
			_ = up.Wait()
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				_ = c.Close()
				break
			}
			if time.Now().After(deadline) {
				stopUp()
				t.Fatalf("run %d: the port %s never answered; up said:\n%s", i, addr, out)
			}
			time.Sleep(5 * time.Millisecond)
		}
		portAt := time.Since(started)
		_, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "alice", "--out", filepath.Join(dir, "alice.creds"))
		mintTook := time.Since(started) - portAt
		stopUp()
		if code != 0 {
			t.Fatalf("run %d: mint as the port answered: exit %d: %s\nup said:\n%s", i, code, stderr, out)
		}
		// A mint that had to wait on the key store found the port open before the mesh was.
		if strings.Contains(stderr, "waiting") {
			t.Fatalf("run %d: mint as the port answered had to wait for the mesh: %s", i, stderr)
		}
		t.Logf("run %d: port answered after %v, mint succeeded in %v", i, portAt.Round(time.Millisecond), mintTook.Round(time.Millisecond))
	}
}

// TestAuthWaitsForAMeshThatHoldsTheKeyStore: a store held without an admin socket is a mesh
// starting or stopping, so auth says once that it waits, and goes on when the lock is free.
func TestAuthWaitsForAMeshThatHoldsTheKeyStore(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	store, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cmd := exec.Command(bin, "auth", "mint", "--dir", dir, "--name", "alice", "--out", filepath.Join(dir, "alice.creds"))
	stderr := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = &testlog.Buffer{}, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !await.Until(8*time.Second, func() bool { return strings.Contains(stderr.String(), "waiting") }) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("auth mint on a held store said nothing of waiting: %q", stderr)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth mint after the store was released: %v; stderr:\n%s", err, stderr)
	}
	if n := strings.Count(stderr.String(), "waiting"); n != 1 {
		t.Fatalf("auth mint said it waits %d times, want once:\n%s", n, stderr)
	}
}

// TestMintOfANameInUse: a second credential under an active name is refused with the two ways
// out, and --replace takes the name over, revoking the first.
func TestMintOfANameInUse(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	startUp(t, bin, dir)
	first := filepath.Join(dir, "eve.creds")
	if _, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "eve", "--out", first); code != 0 {
		t.Fatalf("first mint exit %d: %s", code, stderr)
	}
	second := filepath.Join(dir, "eve2.creds")
	_, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "eve", "--out", second)
	if code != 1 || !strings.Contains(stderr, "name in use") || !strings.Contains(stderr, "--replace") ||
		!strings.Contains(stderr, "--identity") {
		t.Fatalf("second mint of eve: exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(second); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused mint left %s behind: %v", second, err)
	}
	if _, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "eve", "--out", second, "--replace"); code != 0 {
		t.Fatalf("mint --replace exit %d: %s", code, stderr)
	}
	out, _, code := runCotal(t, bin, "auth", "list", "--dir", dir)
	if code != 0 || strings.Count(out, "eve") != 2 || !strings.Contains(out, "revoked") {
		t.Fatalf("after --replace the list should hold eve twice, one revoked:\n%s", out)
	}
}

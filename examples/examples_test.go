package examples_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testlog"
)

// names are the example commands, each a directory of this one.
var names = []string{"embed", "readme", "firehose", "pertest", "workers", "tcp", "observer", "mcp"}

// runTimeout bounds one run of an example; each finishes in well under a second when idle.
const runTimeout = 30 * time.Second

// builtDir holds the example binaries once built; TestMain removes it.
var builtDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// buildExamples builds every example once per test run, in one go command so the packages
// compile once. -ldflags=-w skips the debug information, which is most of the link time. The
// binaries are built without the race detector, which multiplies the start-up time of every
// run: the concurrency they exercise is the libraries', whose own tests run under -race, and
// pertest's test runs in process under -race with `make test`.
var buildExamples = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "cotal-examples-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	args := []string{"build", "-ldflags=-w", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return dir, nil
})

// bin is the path of the built example name.
func bin(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the example programs; skipped with -short")
	}
	dir, err := buildExamples()
	if err != nil {
		t.Fatalf("build the examples: %v", err)
	}
	return filepath.Join(dir, name)
}

// run runs an example to completion and returns its combined output; it fails the test on a
// non-zero exit or when the example does not finish in runTimeout.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	path := bin(t, name) // the build is not part of runTimeout
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not finish within %v; output:\n%s", name, args, runTimeout, out)
	}
	if err != nil {
		t.Fatalf("%s %v: %v; output:\n%s", name, args, err, out)
	}
	return string(out)
}

// requireLines fails unless every pattern matches a whole line of out.
func requireLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(`(?m)^` + p + `$`).MatchString(out) {
			t.Errorf("no line matches %q in the output:\n%s", p, out)
		}
	}
}

func TestEveryExampleRunsToCompletionWithoutArguments(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		check func(t *testing.T, out string)
	}{
		{"embed", []string{
			`bob got a channel message on #general from alice: hello, everyone`,
			`alice got a dm from bob: hi alice, bob here`,
			`closing the mesh`,
		}, nil},
		{"readme", []string{`alice: hello, bob`}, nil},
		{"firehose", []string{
			`alice sent 20000 DMs, at most 512 awaiting acknowledgement: [\d.]+s, \d+ msg/s`,
			`bob handled 20000 DMs: [\d.]+s, \d+ msg/s`,
			`bob's DM consumer owes him nothing`,
		}, nil},
		{"pertest", []string{`shouter replied: HELLO, SERVICE`}, nil},
		{"workers", []string{
			`producer sent 20 tasks to the role "resizer"`,
			`resizer-\d processed \d+`,
			`20 tasks processed, each exactly once`,
		}, workersAddUp},
		{"tcp", []string{
			`mesh listening: cotal://127\.0\.0\.1:\d+/main`,
			`\[alice process, pid \d+\] alice got a dm from bob: hello alice, this is bob`,
			`\[bob process, pid \d+\] bob got a dm from alice: hello bob, this is alice`,
		}, nil},
		{"observer", []string{
			`NAME +KIND +ROLE +STATUS +ACTIVITY +LAST SEEN`,
			`alice +agent +planner +working +planning the release +\d+s ago`,
			`bob +agent +- +idle +- +\d+s ago`,
			`carol +agent +- +offline +- +\d+s ago`,
			`3 peers`,
		}, nil},
	} {
		t.Run(tc.name+" runs on its own and prints the expected lines", func(t *testing.T) {
			out := run(t, tc.name)
			requireLines(t, out, tc.lines...)
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}

// TestTheReadmeExampleIsTheReadmes keeps README.md's embedding example and examples/readme,
// which the test above runs, the same program.
func TestTheReadmeExampleIsTheReadmes(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n## Embedding\n.*?```go\n(.*?)```\n").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go block under \"## Embedding\"")
	}
	prog, err := os.ReadFile("readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := bytes.Cut(prog, []byte("\npackage main\n"))
	if !ok || !bytes.Equal(append([]byte("package main\n"), body...), m[1]) {
		t.Errorf("README.md's embedding example and examples/readme/main.go (after its doc comment) differ; copy one onto the other")
	}
}

// workersAddUp checks the per-worker counts add up to every task, whatever the split.
func workersAddUp(t *testing.T, out string) {
	t.Helper()
	total := 0
	for _, m := range regexp.MustCompile(`(?m)^resizer-\d processed (\d+)$`).FindAllStringSubmatch(out, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 20 {
		t.Errorf("the workers processed %d tasks in all, want 20", total)
	}
}

// process is an example running in the background, its output collected as it comes.
type process struct {
	cmd  *exec.Cmd
	out  *testlog.Buffer
	done chan error
}

// start runs an example in the background; the test's cleanup kills it if still running.
func start(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin(t, name), args...), out: &testlog.Buffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitLine waits until a line of the output matches pattern and returns its submatches.
func (p *process) waitLine(t *testing.T, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + pattern + `$`)
	var m []string
	var exited bool
	var exitErr error
	if !await.Until(runTimeout, func() bool {
		if m = re.FindStringSubmatch(p.out.String()); m != nil {
			return true
		}
		select {
		case exitErr = <-p.done:
			p.done <- exitErr // for the cleanup's wait
			exited = true
			return true
		default:
			return false
		}
	}) {
		t.Fatalf("no line matching %q within %v; output:\n%s", pattern, runTimeout, p.out)
	}
	if exited {
		t.Fatalf("%s exited (%v) without a line matching %q; output:\n%s", p.cmd.Path, exitErr, pattern, p.out)
	}
	return m
}

// interrupt sends SIGINT, as Ctrl-C does, and requires a clean exit.
func (p *process) interrupt(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v; output:\n%s", err, p.out)
		}
	case <-time.After(runTimeout):
		t.Fatalf("still running %v after Ctrl-C; output:\n%s", runTimeout, p.out)
	}
}

// TestTCPByHand follows the three-terminal steps of the tcp example's doc comment.
func TestTCPByHand(t *testing.T) {
	serve := start(t, "tcp", "serve", "--listen", "127.0.0.1:0")
	link := serve.waitLine(t, `mesh listening: (cotal://\S+)`)[1]
	alice := serve.waitLine(t, `  go run \./examples/tcp agent --link \S+ --creds (\S+alice\.creds) --peer bob`)[1]
	bob := serve.waitLine(t, `  go run \./examples/tcp agent --link \S+ --creds (\S+bob\.creds) --peer alice`)[1]
	serve.waitLine(t, `press Ctrl-C to stop`)
	for _, f := range []string{alice, bob} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}

	a := start(t, "tcp", "agent", "--link", link, "--creds", alice, "--peer", "bob")
	requireLines(t, run(t, "tcp", "agent", "--link", link, "--creds", bob, "--peer", "alice"),
		`bob got a dm from alice: hello bob, this is alice`)
	a.waitLine(t, `alice got a dm from bob: hello alice, this is bob`)

	serve.interrupt(t)
	if _, err := os.Stat(filepath.Dir(alice)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary credentials directory outlived serve: %v", err)
	}
}

func TestTCPUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"agent", "--link", "cotal://127.0.0.1:1/main"}} {
		err := exec.Command(bin(t, "tcp"), args...).Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("tcp %s: %v, want exit status 2", strings.Join(args, " "), err)
		}
	}
}

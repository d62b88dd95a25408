package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// streamProc is a running streaming command (tail, who --watch) whose stdout lines a test
// waits on.
type streamProc struct {
	cmd    *exec.Cmd
	stderr *testlog.Buffer
	done   chan struct{} // closed once the process exited and its output is read

	mu    sync.Mutex
	lines []string
	next  int // the first line waitLine has not looked at
}

// startStream runs bin with args and collects its stdout line by line.
func startStream(t *testing.T, bin string, args ...string) *streamProc {
	t.Helper()
	p := &streamProc{cmd: exec.Command(bin, args...), stderr: &testlog.Buffer{}, done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// poll waits until cond holds, failing at once if the process exits first, or after 30 s.
func (p *streamProc) poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	held := false
	if !await.Until(30*time.Second, func() bool {
		// The exit is looked at first, so what the process wrote before exiting is still
		// seen by cond; cond may consume what it matched, so it runs once per look.
		exited := false
		select {
		case <-p.done:
			exited = true
		default:
		}
		held = cond()
		return held || exited
	}) {
		t.Fatalf("no %s within 30s; stdout %q; stderr:\n%s", what, p.seen(), p.stderr)
	}
	if !held {
		t.Fatalf("exited before %s; stdout %q; stderr:\n%s", what, p.seen(), p.stderr)
	}
}

func (p *streamProc) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// waitStderr waits until stderr contains want.
func (p *streamProc) waitStderr(t *testing.T, want string) {
	t.Helper()
	p.poll(t, "stderr with "+want, func() bool { return strings.Contains(p.stderr.String(), want) })
}

// waitLine waits for a stdout line, after the last one matched, containing all of want.
func (p *streamProc) waitLine(t *testing.T, want ...string) string {
	t.Helper()
	var found string
	p.poll(t, fmt.Sprintf("stdout line with %q", want), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for ; p.next < len(p.lines); p.next++ {
			if containsAll(p.lines[p.next], want) {
				found = p.lines[p.next]
				p.next++
				return true
			}
		}
		return false
	})
	return found
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// interrupt sends SIGINT, as Ctrl-C does, and expects exit 0.
func (p *streamProc) interrupt(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("did not stop within 30s of SIGINT; stderr:\n%s", p.stderr)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("exit %d after SIGINT, want 0; stderr:\n%s", code, p.stderr)
	}
}

// mintCreds mints a credential with `cotal auth mint` and returns its file and id.
func mintCreds(t *testing.T, bin, dir, name string, args ...string) (string, string) {
	t.Helper()
	file := filepath.Join(dir, name+".creds")
	full := append([]string{"auth", "mint", "--dir", dir, "--name", name, "--out", file}, args...)
	out, stderr, code := runCotal(t, bin, full...)
	if code != exitOK {
		t.Fatalf("mint %s: exit %d: %s", name, code, stderr)
	}
	return file, strings.TrimSpace(out)
}

// cliCase is one client command run to completion.
type cliCase struct {
	name   string
	args   []string
	code   int
	stdout []string
	stderr []string
}

func (c cliCase) run(t *testing.T, bin string) string {
	t.Helper()
	return c.runEnv(t, bin, nil)
}

// runEnv is run with env added to the test's environment.
func (c cliCase) runEnv(t *testing.T, bin string, env []string) string {
	t.Helper()
	stdout, stderr, code := runCotalEnv(t, bin, env, c.args...)
	if code != c.code {
		t.Fatalf("cotal %q: exit %d, want %d\nstdout: %s\nstderr: %s", c.args, code, c.code, stdout, stderr)
	}
	for _, w := range c.stdout {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout %q does not contain %q", stdout, w)
		}
	}
	for _, w := range c.stderr {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not contain %q", stderr, w)
		}
	}
	return stdout
}

func runCases(t *testing.T, bin string, cases []cliCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, bin) })
	}
}

func TestClientCommandsWithoutAMesh(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	noMesh := "no cotal mesh is running on " + dir + ": start one with `cotal up`"
	var cases []cliCase
	for _, args := range [][]string{
		{"send", "general", "hi"}, {"tail"}, {"who"}, {"history", "general"}, {"channels", "list"},
		{"channels", "set", "general", "--class", "live"}, {"status"}, {"deliver", "pending", "alice"}, {"link"},
	} {
		cases = append(cases, cliCase{name: strings.Join(args[:min(2, len(args))], " ") + " says to start a mesh",
			args: append(args, "--dir", dir), code: exitError, stderr: []string{noMesh}})
	}
	cases = append(cases,
		cliCase{name: "a link nothing listens on says so", args: []string{"who", "--link", "cotal://127.0.0.1:1/main"},
			code: exitError, stderr: []string{"cannot reach the mesh at 127.0.0.1:1", "check the join link"}},
		cliCase{name: "a malformed link is a usage error", args: []string{"history", "general", "--link", "http://host/main"},
			code: exitUsage, stderr: []string{"--link", "cotal://", "`cotal link` shows it"}},
		cliCase{name: "a missing creds file says what to pass", args: []string{"who", "--link", "cotal://127.0.0.1:1/main", "--creds", filepath.Join(dir, "nope.creds")},
			code: exitError, stderr: []string{"bad creds file", "`cotal auth mint`"}},
		cliCase{name: "a target that is no channel is a usage error", args: []string{"send", "a..b", "hi", "--dir", dir},
			code: exitUsage, stderr: []string{"CHANNEL, @NAME, an instance id or svc:ROLE"}},
		cliCase{name: "a zero history limit is a usage error", args: []string{"history", "general", "--limit", "0", "--dir", dir},
			code: exitUsage, stderr: []string{"--limit 0"}},
		cliCase{name: "a set with nothing to change is a usage error", args: []string{"channels", "set", "general", "--dir", dir},
			code: exitUsage, stderr: []string{"nothing to change"}},
		cliCase{name: "an invalid replay window is a usage error", args: []string{"channels", "set", "general", "--replay-window", "0h", "--dir", dir},
			code: exitUsage, stderr: []string{`--replay-window "0h"`, "must be positive"}},
		cliCase{name: "a replay window in another syntax names the allowed units", args: []string{"channels", "set", "general", "--replay-window", "1 hour", "--dir", dir},
			code: exitUsage, stderr: []string{`--replay-window "1 hour"`, "s, m, h, d (24h) or w (7d)"}},
		cliCase{name: "an unknown class is a usage error", args: []string{"channels", "default", "--class", "sometimes", "--dir", dir},
			code: exitUsage, stderr: []string{"not live or durable"}},
		cliCase{name: "a bad --sync is a usage error", args: []string{"up", "--sync", "sometimes", "--dir", dir},
			code: exitUsage, stderr: []string{`--sync: "sometimes" is not a sync mode`}},
		cliCase{name: "a bad --listen is a usage error", args: []string{"up", "--listen", "nope", "--dir", dir},
			code: exitUsage, stderr: []string{`--listen: "nope" is not host:port`}},
		cliCase{name: "a bad --space of up is a usage error", args: []string{"up", "--space", "a b", "--dir", dir},
			code: exitUsage, stderr: []string{`--space "a b"`, `"a_b"`}},
		cliCase{name: "a bad --space of a client command is a usage error", args: []string{"who", "--space", "x.y", "--dir", dir},
			code: exitUsage, stderr: []string{`--space "x.y"`}},
		cliCase{name: "a bad --profile is a usage error", args: []string{"auth", "mint", "--name", "x", "--profile", "boss", "--dir", dir},
			code: exitUsage, stderr: []string{`--profile "boss": use agent, observer, admin or leaf`}},
		cliCase{name: "an agent-only flag with another profile is a usage error naming it",
			args: []string{"auth", "mint", "--name", "x", "--profile", "observer", "--subscribe", "general", "--role", "r", "--dir", dir},
			code: exitUsage, stderr: []string{"--profile observer takes no --subscribe, --role", "apply only to the agent profile"}},
		cliCase{name: "a negative --expires-in is a usage error in words", args: []string{"auth", "mint", "--name", "x", "--expires-in", "-1h", "--dir", dir},
			code: exitUsage, stderr: []string{`--expires-in "-1h"`, "it must be positive"}},
		cliCase{name: "a typo'd subcommand gets a suggestion", args: []string{"auth", "mnit"},
			code: exitUsage, stderr: []string{`unknown command "mnit"`, "did you mean mint?"}},
		cliCase{name: "a typo'd top-level command gets a suggestion", args: []string{"sned"},
			code: exitUsage, stderr: []string{`unknown command "sned"`, "send"}},
		cliCase{name: "a typo'd flag gets a suggestion", args: []string{"send", "general", "hi", "--jsn"},
			code: exitUsage, stderr: []string{"unknown flag: --jsn", "did you mean --json?"}},
		cliCase{name: "a missing argument is named", args: []string{"history", "--dir", dir},
			code: exitUsage, stderr: []string{"missing argument CHANNEL"}},
		cliCase{name: "an extra argument is named", args: []string{"send", "general", "hi", "there", "--dir", dir},
			code: exitUsage, stderr: []string{`unexpected argument "there"`}},
		cliCase{name: "--version prints the versions", args: []string{"--version"},
			code: exitOK, stdout: []string{"cotal ", "Go ", "nats-server "}},
		cliCase{name: "help documents the exit codes", args: []string{"help", "exit-codes"},
			code: exitOK, stdout: []string{"0  success", "1  the command ran and failed", "2  the command line was wrong"}},
	)
	cfgDir, badDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "cotal.yaml"), []byte("listen: 127.0.0.1:5000\nsync: interval\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badDir, "cotal.yaml"), []byte("sync: sometimes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	undecodable, weekly := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(weekly, "cotal.yaml"), []byte("sync: interval\nsync_interval: 1d12h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(undecodable, "cotal.yaml"), []byte("expiry: 1y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases = append(cases,
		cliCase{name: "config prints each key with the layer that set it", args: []string{"config", "--dir", cfgDir, "--http", "127.0.0.1:8222"},
			code: exitOK, stdout: []string{"KEY", "FROM", "file " + filepath.Join(cfgDir, "cotal.yaml"), "flag", "default"}},
		cliCase{name: "config --json is a list of key, value and source", args: []string{"config", "--dir", cfgDir, "--json", "--http", "127.0.0.1:8222"},
			code: exitOK, stdout: []string{`{"key":"listen","value":"127.0.0.1:5000","source":"file ` + filepath.Join(cfgDir, "cotal.yaml") + `"}`,
				`{"key":"http","value":"127.0.0.1:8222","source":"flag"}`, `{"key":"expiry","value":"1d","source":"default"}`}},
		cliCase{name: "up --check validates and exits", args: []string{"up", "--check", "--dir", cfgDir},
			code: exitOK, stdout: []string{"configuration is valid", "listen 127.0.0.1:5000", "sync interval"}},
		cliCase{name: "a config value that does not decode is one line naming the key and the allowed units", args: []string{"up", "--check", "--dir", undecodable},
			code: exitError, stderr: []string{`cotal.yaml: key expiry: not a duration: "1y"; use counts and units, s, m, h, d (24h) or w (7d)`}},
		cliCase{name: "sync_interval takes days and weeks like every duration", args: []string{"config", "--json", "--dir", weekly},
			code: exitOK, stdout: []string{`{"key":"sync_interval","value":"1d12h","source":"file `}},
		cliCase{name: "up --check of an invalid file fails naming the key", args: []string{"up", "--check", "--dir", badDir},
			code: exitError, stderr: []string{`sync: "sometimes" is not a sync mode`}},
	)
	garbage := filepath.Join(dir, "garbage.creds")
	if err := os.WriteFile(garbage, []byte("not a credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, cliCase{name: "a creds file that is not one says so",
		args: []string{"who", "--link", "cotal://127.0.0.1:1/main", "--creds", garbage},
		code: exitError, stderr: []string{"bad creds file " + garbage, "mint a credential with `cotal auth mint`"}})
	runCases(t, bin, cases)
}

func TestClientCommandsAgainstAMesh(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	local := []string{"--dir", dir}
	alice, aliceID := mintCreds(t, bin, dir, "alice", "--subscribe", "general", "--allow-publish", "general")
	bob, _ := mintCreds(t, bin, dir, "bob", "--subscribe", "general", "--allow-publish", "general")
	watcher, _ := mintCreds(t, bin, dir, "watcher", "--profile", "observer")
	asBob := []string{"--link", up.link, "--creds", bob}
	asAlice := []string{"--link", up.link, "--creds", alice}

	runCases(t, bin, []cliCase{
		{name: "send as a remote agent reports the stream sequence honestly", args: append([]string{"send", "general", "hello from bob"}, asBob...),
			code: exitOK, stdout: []string{"stored in CHAT_main at sequence 1 (storage confirmed; delivery is not)"}},
		{name: "send to a channel that does not exist refuses and suggests the close one", args: append([]string{"send", "genral", "hi"}, local...),
			code: exitError, stderr: []string{`no such channel "genral"`, "did you mean general?", "--create"}},
		{name: "send beside up mints its own credential and --create starts a channel", args: append([]string{"send", "other", "an aside", "--create"}, local...),
			code: exitOK, stdout: []string{"stored in CHAT_main at sequence 2"}},
		{name: "a credential sent to another space's link says which space it belongs to", args: []string{"send", "general", "hi", "--link", strings.Replace(up.link, "/main", "/nosuch", 1), "--creds", bob},
			code: exitError, stderr: []string{`the credential of "bob" belongs to space main`, "names space nosuch", "`cotal link --space main`"}},
		{name: "a space the local mesh does not have says so", args: append([]string{"who", "--space", "nosuch"}, local...),
			code: exitError, stderr: []string{"nosuch"}},
		{name: "link prints the join link", args: append([]string{"link", "--space", "main"}, local...),
			code: exitOK, stdout: []string{up.link + "\n"}},
		{name: "history prints the retained messages", args: append([]string{"history", "general"}, local...),
			code: exitOK, stdout: []string{"#general bob: hello from bob"}},
		{name: "history of an unknown channel says where to look", args: append([]string{"history", "genral"}, local...),
			code: exitError, stderr: []string{`unknown channel "genral"`, "`cotal channels list`"}},
		{name: "history outside the read ACL says what to mint", args: append([]string{"history", "other"}, asAlice...),
			code: exitError, stderr: []string{`"alice"`, "read ACL", "--allow-subscribe"}},
		{name: "send outside allowPublish says what to mint", args: append([]string{"send", "random", "hi", "--create"}, asAlice...),
			code: exitError, stderr: []string{`channel "random" is outside the allowPublish of "alice"`, "--allow-publish random"}},
		{name: "a hint names the channel in a form mint accepts", args: append([]string{"send", "#random", "hi", "--create"}, asAlice...),
			code: exitUsage, stderr: []string{`write the sanitized form "_random"`}},
		{name: "an observer credential cannot send", args: []string{"send", "general", "hi", "--link", up.link, "--creds", watcher},
			code: exitError, stderr: []string{"cannot send", "is an observer credential", "agent credential"}},
		{name: "a DM to a name nobody online has says how to find one", args: append([]string{"send", "@carol", "hi"}, asBob...),
			code: exitError, stderr: []string{"@carol", "`cotal who`"}},
		{name: "an observer reads history too", args: []string{"history", "general", "--link", up.link, "--creds", watcher},
			code: exitOK, stdout: []string{"hello from bob"}},
		{name: "channels set refuses an unknown channel and offers --create", args: append([]string{"channels", "set", "genral", "--class", "live"}, local...),
			code: exitError, stderr: []string{`unknown channel "genral"`, "or pass --create to configure it"}},
		{name: "channels set changes a channel", args: append([]string{"channels", "set", "general", "--description", "team chat", "--replay-window", "24h"}, local...),
			code: exitOK, stdout: []string{"channel general in space main", "window 24h", "description team chat"}},
		{name: "a combined replay window is stored as SPEC §7 spells it", args: append([]string{"channels", "set", "alerts", "--replay-window", "1h30m", "--create"}, local...),
			code: exitOK, stdout: []string{"window 90m"}},
		{name: "channels set --create configures a channel before its first message", args: append([]string{"channels", "set", "alerts", "--class", "live", "--create"}, local...),
			code: exitOK, stdout: []string{"class live"}},
		{name: "channels default changes the space defaults", args: append([]string{"channels", "default", "--replay-window", "7d"}, local...),
			code: exitOK, stdout: []string{"space main defaults: class durable, replay on, window 7d"}},
		{name: "channels list shows counts and config", args: append([]string{"channels", "list"}, asBob...),
			code: exitOK, stdout: []string{"space defaults: class durable, replay on, window 7d", "general  1", "24h", "team chat", "alerts", "live", "other"}},
		{name: "channels rm removes a channel's messages and config", args: append([]string{"channels", "rm", "other", "--force"}, local...),
			code: exitOK, stdout: []string{"removed channel other from space main: 1 message and no config"}},
		{name: "a removed channel is gone", args: append([]string{"history", "other"}, local...),
			code: exitError, stderr: []string{`unknown channel "other"`}},
		{name: "channels rm of an unknown channel fails", args: append([]string{"channels", "rm", "other", "--force"}, local...),
			code: exitError, stderr: []string{`unknown channel "other"`}},
		{name: "channels rm without a channel says which argument is missing", args: append([]string{"channels", "rm"}, local...),
			code: exitUsage, stderr: []string{"missing argument CHANNEL"}},
		{name: "who as a remote agent reads the roster without joining it", args: append([]string{"who", "--json"}, asBob...),
			code: exitOK, stdout: []string{"["}},
		{name: "shell completion offers the agents for deliver pending", args: []string{"__complete", "deliver", "pending", "--dir", dir, ""},
			code: exitOK, stdout: []string{"alice\n", "bob\n", ":4"}},
		{name: "deliver pending of an unknown name says where to look", args: append([]string{"deliver", "pending", "carol"}, local...),
			code: exitError, stderr: []string{`named "carol"`, "`cotal auth list`"}},
	})

	t.Run("send reads the text from stdin", func(t *testing.T) {
		cmd := exec.Command(bin, append([]string{"send", "general", "--json"}, asBob...)...)
		cmd.Stdin = strings.NewReader("piped text\n")
		out, err := cmd.Output()
		var r receipt
		if err != nil || json.Unmarshal(out, &r) != nil || r.Stream != "CHAT_main" || r.Seq == 0 || r.Delivered != "unknown" {
			t.Fatalf("send from stdin: %v, %s", err, out)
		}
	})

	t.Run("an admin tail shows history first, then live channel messages and DMs, and exits 0 on Ctrl-C", func(t *testing.T) {
		tail := startStream(t, bin, append([]string{"tail", "--history", "1", "--json"}, local...)...)
		tail.waitStderr(t, "following")
		var it item
		if err := json.Unmarshal([]byte(tail.waitLine(t, `"historical":true`)), &it); err != nil || it.Message.Parts[0].Text != "piped text" {
			t.Fatalf("first line is not the last retained message: %+v (%v)", it, err)
		}
		cliCase{args: append([]string{"send", "general", "live one"}, asBob...)}.run(t, bin)
		tail.waitLine(t, `"kind":"channel"`, "live one", `"historical":false`)
		cliCase{args: append([]string{"send", aliceID, "a direct word"}, asBob...), stdout: []string{"stored in DM_main"}}.run(t, bin)
		tail.waitLine(t, `"kind":"dm"`, "a direct word")
		tail.interrupt(t)
		if strings.Contains(tail.stderr.String(), "lost the mesh") {
			t.Fatalf("Ctrl-C made tail say it lost the mesh:\n%s", tail.stderr)
		}
	})

	t.Run("tail as an agent is present, joins durably and receives its DMs", func(t *testing.T) {
		who := startStream(t, bin, append([]string{"who", "--watch", "--json"}, local...)...)
		who.waitLine(t, "[")
		tail := startStream(t, bin, append([]string{"tail"}, asAlice...)...)
		tail.waitStderr(t, "general: joined durable")
		tail.waitStderr(t, "following")
		who.waitLine(t, `"name":"alice"`, `"status":"idle"`)
		cliCase{args: append([]string{"who"}, local...), stdout: []string{"alice", "endpoint", "idle"}}.run(t, bin)
		cliCase{args: append([]string{"send", "@alice", "psst"}, asBob...), stdout: []string{"stored in DM_main"}}.run(t, bin)
		cliCase{name: "a one-shot send with alice's credential", args: append([]string{"send", "general", "from alice's file"}, asAlice...),
			stdout: []string{"stored in CHAT_main"}}.run(t, bin)
		if out := (cliCase{args: append([]string{"who", "--json"}, local...)}).run(t, bin); !regexp.MustCompile(`"name":"alice"[^}]*"status":"idle"`).MatchString(out) {
			t.Fatalf("a one-shot send with alice's credential touched her presence:\n%s", out)
		}
		for _, line := range who.seen() {
			if regexp.MustCompile(`"name":"alice"[^}]*"status":"offline"`).MatchString(line) {
				t.Fatalf("who --watch saw alice offline around a one-shot send with her credential:\n%s", line)
			}
		}
		cliCase{name: "a name without its @ is refused with the @name suggested", args: append([]string{"send", "alice", "hi"}, asBob...),
			code: exitError, stderr: []string{`no such channel "alice"`, "@alice"}}.run(t, bin)
		cliCase{name: "a shortened instance id is refused with the full id suggested", args: append([]string{"send", aliceID[:8], "hi"}, asBob...),
			code: exitError, stderr: []string{"no such channel", aliceID}}.run(t, bin)
		tail.waitLine(t, "dm bob: psst")
		tail.interrupt(t)
		if strings.Contains(tail.stderr.String(), "lost the mesh") {
			t.Fatalf("Ctrl-C made tail say it lost the mesh:\n%s", tail.stderr)
		}
		who.interrupt(t)
	})

	t.Run("status reports health, streams and members", func(t *testing.T) {
		out := cliCase{args: append([]string{"status", "--json"}, local...)}.run(t, bin)
		var st space.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Spaces) != 1 {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		if k := regexp.MustCompile(`"[A-Z]\w*":`).FindString(out); k != "" {
			t.Fatalf("status --json has the key %s; every key is camelCase:\n%s", k, out)
		}
		names := map[string]bool{}
		for _, m := range st.Spaces[0].Members {
			names[m.Name] = true
		}
		if !names["alice"] || !names["bob"] || st.Connections == 0 {
			t.Fatalf("status members %v, connections %d; want alice and bob", names, st.Connections)
		}
		cliCase{args: append([]string{"status"}, local...), stdout: []string{"healthy", "CHAT_main", "MEMBER", "alice"}}.run(t, bin)
	})

	t.Run("a mint while the mesh runs provisions the agent's consumers by default", func(t *testing.T) {
		out := cliCase{args: append([]string{"auth", "mint", "--name", "frank", "--json", "--out", filepath.Join(dir, "frank.creds")}, local...)}.run(t, bin)
		if !strings.Contains(out, `"provisioned":true`) {
			t.Fatalf("mint --json: %s", out)
		}
		out = cliCase{args: append([]string{"deliver", "pending", "frank"}, local...), stdout: []string{"dm_"}}.run(t, bin)
		if strings.Contains(out, "does not exist") {
			t.Fatalf("frank's consumers are missing:\n%s", out)
		}
	})

	t.Run("auth revoke takes a name as well as an id", func(t *testing.T) {
		_, eveID := mintCreds(t, bin, dir, "eve")
		cliCase{args: append([]string{"auth", "revoke", "eve"}, local...), stdout: []string{"revoked " + eveID}}.run(t, bin)
		cliCase{args: append([]string{"auth", "revoke", "eve"}, local...), code: exitError,
			stderr: []string{`no active credential is named "eve"`, "`cotal auth list`"}}.run(t, bin)
	})

	t.Run("the CLI's own short-lived identities are hidden unless --all", func(t *testing.T) {
		out := cliCase{args: append([]string{"auth", "list"}, local...), stderr: []string{"of cotal's own commands hidden; --all shows them"}}.run(t, bin)
		if strings.Contains(out, "cli-") || !strings.Contains(out, "alice") {
			t.Fatalf("auth list shows the CLI's own credentials:\n%s", out)
		}
		cliCase{args: append([]string{"auth", "list", "--all"}, local...), stdout: []string{"cli-send-"}}.run(t, bin)
		// An expiring credential's row leaves the registry once it expired, at the mesh's next
		// pass (each command beside up mints, and every mint runs one), not at the next start.
		_, shortID := mintCreds(t, bin, dir, "cli-probe-short", "--expires-in", "1s", "--profile", "observer")
		await.True(t, 30*time.Second, "the expired credential forgotten", func() bool {
			cliCase{args: append([]string{"who"}, local...)}.run(t, bin)
			out, _, _ := runCotal(t, bin, append([]string{"auth", "list", "--all"}, local...)...)
			return !strings.Contains(out, shortID)
		})
		if out := (cliCase{args: append([]string{"status"}, local...)}).run(t, bin); strings.Contains(out, "cli-") {
			t.Fatalf("status shows the CLI's own identities:\n%s", out)
		}
		if out := (cliCase{args: append([]string{"who"}, local...)}).run(t, bin); strings.Contains(out, "cli-") {
			t.Fatalf("who shows the CLI's own identities:\n%s", out)
		}
	})

	t.Run("deliver pending shows what waits for an instance", func(t *testing.T) {
		cliCase{args: append([]string{"deliver", "pending", "bob"}, local...),
			stdout: []string{"waiting for bob", "DMs", "dm_", "durable copies", "dlv_"}}.run(t, bin)
	})
}

func TestClientCommandsAgainstAnOpenMesh(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	startUp(t, bin, dir, "--open")
	local := []string{"--dir", dir}
	openMode := "started with `cotal up --open`, so there is nothing to mint"
	runCases(t, bin, []cliCase{
		{name: "send works without a credential", args: append([]string{"send", "general", "hello, open mesh", "--create"}, local...),
			code: exitOK, stdout: []string{"stored in CHAT_main at sequence 1"}},
		{name: "history reads it", args: append([]string{"history", "general"}, local...),
			code: exitOK, stdout: []string{"hello, open mesh"}},
		{name: "channels list lists it", args: append([]string{"channels", "list"}, local...),
			code: exitOK, stdout: []string{"general"}},
		{name: "who reads the roster", args: append([]string{"who"}, local...), code: exitOK},
		{name: "status works", args: append([]string{"status"}, local...), code: exitOK, stdout: []string{"healthy"}},
		{name: "auth mint explains open mode", args: append([]string{"auth", "mint", "--name", "alice", "--out", filepath.Join(dir, "alice.creds")}, local...),
			code: exitError, stderr: []string{openMode}},
		{name: "auth list explains open mode", args: append([]string{"auth", "list"}, local...),
			code: exitError, stderr: []string{openMode}},
	})
}

func TestTailSaysWhenItLosesAndRegainsTheMesh(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	addr := spacetest.FreeAddr(t)
	up := startUp(t, bin, dir, "--listen", addr)
	alice, _ := mintCreds(t, bin, dir, "alice", "--subscribe", "general")
	tail := startStream(t, bin, "tail", "--link", up.link, "--creds", alice)
	tail.waitStderr(t, "following")

	_ = up.cmd.Process.Kill()
	tail.waitStderr(t, "lost the mesh")
	startUp(t, bin, dir, "--listen", addr)
	tail.waitStderr(t, "reconnected to the mesh")
	tail.interrupt(t)
}

func TestTailSaysWhenItsCredentialIsRevoked(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir, "--listen", spacetest.FreeAddr(t))
	alice, _ := mintCreds(t, bin, dir, "alice", "--subscribe", "general")
	tail := startStream(t, bin, "tail", "--link", up.link, "--creds", alice)
	tail.waitStderr(t, "following")
	cliCase{args: []string{"auth", "revoke", "--dir", dir, "alice"}, stdout: []string{"revoked "}}.run(t, bin)
	tail.waitStderr(t, "it was revoked or replaced by a re-mint; ask whoever runs the mesh for a new one")
	if strings.Contains(tail.stderr.String(), "run tail again") {
		t.Errorf("tail asks to run it again with a revoked credential:\n%s", tail.stderr)
	}
}

package cli

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShellCompletion drives `cotal __complete`, what the shell scripts of `cotal completion`
// run: channels and agents come from the mesh the flags reach, fixed sets from the flags'
// rules, and a mesh that does not answer completes nothing within about a second.
func TestShellCompletion(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	local := []string{"--dir", dir}
	cliCase{args: append([]string{"send", "general", "hello", "--create"}, local...), stdout: []string{"stored in CHAT_main"}}.run(t, bin)
	alice := filepath.Join(dir, "alice.creds")
	cliCase{args: append([]string{"auth", "mint", "--name", "alice", "--subscribe", "general", "--out", alice}, local...)}.run(t, bin)
	remote := []string{"--link", up.link, "--creds", alice}
	for _, tc := range []struct {
		name      string
		args      []string // the word being completed, "", follows
		want, not []string
	}{
		{"history offers the channels beside up", append([]string{"history"}, local...), []string{"general\n"}, []string{"@alice"}},
		{"history offers the channels through a link", append([]string{"history"}, remote...), []string{"general\n"}, nil},
		{"tail offers each channel once", append([]string{"tail", "general"}, local...), nil, []string{"general\n"}},
		{"send offers channels and agents", append([]string{"send"}, local...), []string{"general\n", "@alice\n"}, nil},
		{"channels rm offers the channels", append([]string{"channels", "rm"}, local...), []string{"general\n"}, nil},
		{"--space offers the mesh's spaces", append(local, "status", "--space"), []string{"main\n"}, nil},
		{"--profile", []string{"auth", "mint", "--profile"}, []string{"agent\n", "observer\n", "admin\n", "leaf\n"}, nil},
		{"--sync", []string{"up", "--sync"}, []string{"always\n", "interval\n"}, nil},
		{"--log-format", []string{"who", "--log-format"}, []string{"text\n", "json\n"}, nil},
		{"--log-level", []string{"up", "--log-level"}, []string{"debug\n", "info\n", "warn\n", "error\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCotal(t, bin, append(append([]string{"__complete"}, tc.args...), "")...)
			if code != exitOK || !strings.HasSuffix(out, ":4\n") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want completions without files", code, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("completions %q lack %q", out, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("completions %q offer %q", out, n)
				}
			}
		})
	}
	t.Run("a mesh that does not answer completes nothing, at once", func(t *testing.T) {
		silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never speaks NATS
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		link := "cotal://" + silent.Addr().String() + "/main"
		began := time.Now()
		out, _, code := runCotal(t, bin, "__complete", "history", "--link", link, "--creds", alice, "")
		if took := time.Since(began); code != exitOK || out != ":4\n" || took > 2500*time.Millisecond {
			t.Fatalf("exit %d, stdout %q after %v; want no completion within about a second", code, out, took)
		}
	})
}

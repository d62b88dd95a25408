package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSavedContexts: a context saved with a link and a .creds file is used by --context and,
// once selected, by every client command given no link; flags and COTAL_* come first, a
// context whose credential is gone says what to run, and a context another user could write
// is refused.
func TestSavedContexts(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	cliCase{args: []string{"send", "general", "hello from the mesh", "--create", "--dir", dir}, stdout: []string{"stored in CHAT_main"}}.run(t, bin)
	alice := filepath.Join(dir, "alice.creds")
	cliCase{args: []string{"auth", "mint", "--dir", dir, "--name", "alice", "--subscribe", "general", "--out", alice}}.run(t, bin)

	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		envLink + "=", envCreds + "="}
	run := func(extra []string, args ...string) (string, string, int) {
		t.Helper()
		return runCotalEnv(t, bin, append(env, extra...), args...)
	}
	contexts := filepath.Join(home, "config", "cotal", "contexts")
	prod := filepath.Join(contexts, "prod.json")

	if out, stderr, code := run(nil, "context", "save", "prod", "--link", up.link, "--creds", alice); code != exitOK || !strings.Contains(out, "saved context prod") {
		t.Fatalf("context save: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	t.Run("the context is private and names the credential without its seed", func(t *testing.T) {
		data, err := os.ReadFile(prod)
		if err != nil {
			t.Fatal(err)
		}
		if userSeed.Match(data) || !strings.Contains(string(data), alice) {
			t.Fatalf("prod.json holds a seed or not the path %s:\n%s", alice, data)
		}
		for path, want := range map[string]os.FileMode{prod: 0o600, contexts: 0o700} {
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %04o", path, fi.Mode().Perm(), err, want)
			}
		}
	})
	t.Run("without a context a command reaches for the default data directory", func(t *testing.T) {
		if _, stderr, code := run(nil, "history", "general"); code != exitError || !strings.Contains(stderr, "no cotal mesh") {
			t.Fatalf("history: exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("--context uses it", func(t *testing.T) {
		if out, stderr, code := run(nil, "history", "general", "--context", "prod"); code != exitOK || !strings.Contains(out, "hello from the mesh") {
			t.Fatalf("history --context prod: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	})
	cliCase{args: []string{"context", "select", "prod"}, stdout: []string{"selected context prod"}}.runEnv(t, bin, env)
	t.Run("the selected context is used by default and marked", func(t *testing.T) {
		if out, stderr, code := run(nil, "history", "general"); code != exitOK || !strings.Contains(out, "hello from the mesh") {
			t.Fatalf("history: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		if out, _, code := run(nil, "context", "ls"); code != exitOK || !strings.Contains(out, "* prod") || !strings.Contains(out, alice) {
			t.Fatalf("context ls: exit %d:\n%s", code, out)
		}
		if out, _, _ := run(nil, "__complete", "history", ""); !strings.Contains(out, "general\n") {
			t.Errorf("history's completion through the context: %q; want general", out)
		}
		// channels rm works beside `cotal up` only: a context is not its mesh.
		if out, _, _ := run(nil, "__complete", "channels", "rm", ""); strings.Contains(out, "general") {
			t.Errorf("channels rm's completion took the context: %q", out)
		}
	})
	t.Run("COTAL_CREDS comes before the selected context", func(t *testing.T) {
		missing := filepath.Join(home, "nobody.creds")
		if _, stderr, code := run([]string{envCreds + "=" + missing}, "history", "general"); code != exitError || !strings.Contains(stderr, missing) {
			t.Fatalf("history with COTAL_CREDS: exit %d, stderr %q; want the env's file named", code, stderr)
		}
	})
	t.Run("a context whose credential is gone says what to run", func(t *testing.T) {
		gone := filepath.Join(home, "gone.creds")
		data, _ := os.ReadFile(alice)
		if err := os.WriteFile(gone, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cliCase{args: []string{"context", "save", "old", "--link", up.link, "--creds", gone}}.runEnv(t, bin, env)
		_ = os.Remove(gone)
		_, stderr, code := run(nil, "history", "general", "--context", "old")
		if code != exitError || !strings.Contains(stderr, "context old: its credential "+gone+" is gone") || !strings.Contains(stderr, "cotal context save old") {
			t.Fatalf("history --context old: exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("a context others could write is refused", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			path  string
			mode  os.FileMode
			owner int
		}{
			{"file writable by others", prod, 0o666, -1},
			{"directory writable by others", contexts, 0o777, -1},
			{"file of another user", prod, 0o600, 4242},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.owner >= 0 && os.Geteuid() != 0 {
					t.Skip("giving a file to another user takes root")
				}
				fi, err := os.Stat(tc.path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(tc.path, tc.mode); err != nil {
					t.Fatal(err)
				}
				defer os.Chmod(tc.path, fi.Mode().Perm())
				if tc.owner >= 0 {
					if err := os.Chown(tc.path, tc.owner, tc.owner); err != nil {
						t.Fatal(err)
					}
					defer os.Chown(tc.path, os.Geteuid(), os.Getegid())
				}
				_, stderr, code := run(nil, "history", "general")
				if code != exitError || !strings.Contains(stderr, "could have been written by another user") {
					t.Fatalf("history: exit %d, stderr %q; want the context refused", code, stderr)
				}
			})
		}
	})
	t.Run("rm removes the context and its selection", func(t *testing.T) {
		cliCase{args: []string{"context", "rm", "prod"}, stdout: []string{"removed context prod"}}.runEnv(t, bin, env)
		if _, err := os.Stat(prod); !os.IsNotExist(err) {
			t.Fatalf("prod.json after rm: %v", err)
		}
		if _, stderr, code := run(nil, "history", "general"); code != exitError || !strings.Contains(stderr, "no cotal mesh") {
			t.Fatalf("history after rm: exit %d, stderr %q; want the default data directory again", code, stderr)
		}
	})
}

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthOnADirectoryNoMeshUsed: auth list and auth revoke on a data directory no mesh has
// used say so and what to do, in the command line's words, and leave nothing behind; a space
// the key store lacks is named as such.
func TestAuthOnADirectoryNoMeshUsed(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "nosuch")
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "UAS5UD7RBH2N7FYK6IG7QFHMP3JWZDX64IFS6MCPD6MLHFHIUXPSL65Y"
	for _, tt := range []struct {
		name string
		dir  string
		args []string
	}{
		{"auth list on a directory that does not exist", missing, []string{"auth", "list"}},
		{"auth list on an empty directory", empty, []string{"auth", "list"}},
		{"auth revoke of a name", empty, []string{"auth", "revoke", "alice"}},
		{"auth revoke of an id", missing, []string{"auth", "revoke", id}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runForStderr(append(tt.args, "--dir", tt.dir))
			want := "cotal: no mesh data in " + tt.dir + ": start `cotal up --dir " + tt.dir + "` first, or check --dir\n"
			if code != exitError || stderr != want {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a refused command created %s (%v)", missing, err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("a refused command left %d entries in %s, the first %s", len(entries), empty, entries[0].Name())
	}

	t.Run("a space the key store lacks is named, with how to provision it", func(t *testing.T) {
		dir := filepath.Join(root, "minted")
		checkRun(t, []string{"auth", "mint", "--dir", dir, "--init", "--name", "alice", "--out", filepath.Join(root, "alice.creds")}, exitOK, nil, nil)
		checkRun(t, []string{"auth", "list", "--dir", dir}, exitOK, []string{"alice"}, nil)
		code, stderr := runForStderr([]string{"auth", "list", "--dir", dir, "--space", "other"})
		want := `unknown space "other": the key store in ` + dir + " has no such space; `cotal up --dir " + dir + " --space other` provisions it"
		if code != exitError || !strings.Contains(stderr, want) || strings.Contains(stderr, "EnsureSpace") {
			t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
		}
	})
}

// runForStderr runs the command line args and returns its exit code and stderr.
func runForStderr(args []string) (int, string) {
	var out, errOut bytes.Buffer
	code := Run(args, &out, &errOut)
	return code, errOut.String()
}

// TestMintIntoAMistypedDirIsRefused: auth mint on a data directory no mesh used and nothing
// was minted in refuses, creating nothing, unless --init asks for a new key store; once one
// exists, minting there needs no flag.
func TestMintIntoAMistypedDirIsRefused(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "typo")
	mint := func(name string, extra ...string) []string {
		return append([]string{"auth", "mint", "--dir", dir, "--name", name, "--out", filepath.Join(root, name+".creds")}, extra...)
	}
	checkRun(t, mint("alice"), exitError, nil, []string{"cotal: no mesh data in " + dir, "no mesh would accept the credential",
		"check --dir", "`cotal up --dir " + dir + "`", "--init"})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused mint created %s (%v)", dir, err)
	}
	if _, err := os.Stat(filepath.Join(root, "alice.creds")); !os.IsNotExist(err) {
		t.Fatalf("a refused mint wrote a credential (%v)", err)
	}
	checkRun(t, mint("alice", "--init"), exitOK, nil, nil)
	checkRun(t, mint("bob"), exitOK, nil, nil)
}

// TestAMintBesideAMeshStillStartingWaitsForIt: `cotal up --dir D &` and then a mint on D, as
// the recipes of docs/cluster.md and docs/leaf.md run them: the mint waits for the starting
// mesh's data instead of refusing the directory.
func TestAMintBesideAMeshStillStartingWaitsForIt(t *testing.T) {
	bin := cotalBin(t)
	dir := filepath.Join(t.TempDir(), "n1")
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		cmd := exec.Command(bin, "auth", "mint", "--dir", dir, "--name", "alice", "--out", filepath.Join(t.TempDir(), "alice.creds"))
		var e bytes.Buffer
		cmd.Stderr = &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		done <- result{e.String(), code}
	}()
	startUp(t, bin, dir)
	if r := <-done; r.code != exitOK {
		t.Fatalf("the mint beside a starting mesh exited %d:\n%s", r.code, r.stderr)
	}
}

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

// TestUpLogsWhatHappensOnTheMesh follows `cotal up`'s log as a user watches it: a mint, an
// agent coming online and joining a durable channel, a refusal named by agent, the agent
// leaving, and after a restart one line for the recovered store.
func TestUpLogsWhatHappensOnTheMesh(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	logged := func(what string, want ...string) {
		t.Helper()
		await.True(t, 30*time.Second, what, func() bool {
			for _, line := range strings.Split(up.out.String(), "\n") {
				if containsAll(line, want) {
					return true
				}
			}
			return false
		})
	}
	alice, aliceID := mintCreds(t, bin, dir, "alice", "--subscribe", "general", "--allow-publish", "general")
	logged("the mint", `msg="minted a credential"`, "name=alice", "id="+aliceID)

	tail := startStream(t, bin, "tail", "--link", up.link, "--creds", alice)
	tail.waitStderr(t, "following")
	logged("alice online", "level=INFO", `msg="agent online"`, "name=alice", "id="+aliceID)
	logged("alice's durable join", `msg="joined a durable channel"`, "channel=general", "name=alice")
	for _, line := range strings.Split(up.out.String(), "\n") {
		if strings.Contains(line, "joined a durable channel") && strings.Count(line, "space=") != 1 {
			t.Errorf("the join line names the space %d times: %s", strings.Count(line, "space="), line)
		}
	}

	nc, err := connectCreds(up.link, alice, aliceID)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("cotal.main.chat.random", []byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	logged("the refusal named by agent", "level=WARN", `msg="refused a publish outside its grants"`, "space=main", "name=alice",
		"subject=cotal.main.chat.random")
	nc.Close()

	cliCase{args: []string{"send", "general", "hi", "--create", "--dir", dir}, stdout: []string{"stored in CHAT_main"}}.run(t, bin)
	tail.interrupt(t)
	logged("alice offline", `msg="agent offline"`, "name=alice")

	up.stop(t)
	first := up.out.String()
	for _, noise := range []string{"Violation", "cli-send-", "recreated a missing consumer"} {
		if strings.Contains(first, noise) {
			t.Errorf("up's log shows %q:\n%s", noise, first)
		}
	}
	if k := accountKey.FindString(first); k != "" {
		t.Errorf("up's log shows the account key %s:\n%s", k, first)
	}

	// Minted while no mesh runs: the next start creates bob's consumers, as expected, and says
	// so at info with his name, not as a recovery warning.
	_, bobID := mintCreds(t, bin, dir, "bob")
	again := startUp(t, bin, dir)
	out := again.out.String()
	if n := strings.Count(out, `msg="recovered the stored state"`); n != 1 || strings.Contains(out, "Restored ") ||
		!strings.Contains(out, "warnings=0") {
		t.Fatalf("a restart logged %d recovery summaries; want one, with no warnings and no per-stream lines:\n%s", n, out)
	}
	up = again // logged reads up
	logged("bob's consumers created at start", "level=INFO", `msg="created an agent's consumer"`, "name=bob", "owner="+bobID)

	// A revocation takes the credential's consumers with it: the revocation is the news.
	cliCase{args: []string{"auth", "revoke", "--dir", dir, "bob"}, stdout: []string{"revoked " + bobID}}.run(t, bin)
	logged("bob's revocation", `msg="revoked a credential"`, "name=bob")
	again.stop(t)
	out = again.out.String()
	for _, noise := range []string{"recreated a missing consumer", "name=unknown", "deleted a consumer the layout does not allow", "level=WARN"} {
		if strings.Contains(out, noise) {
			t.Errorf("the restarted up's log shows %q:\n%s", noise, out)
		}
	}
}

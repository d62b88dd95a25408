package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
)

// TestSendByNameReachesAnOfflineAgent: beside `cotal up`, `send @alice` finds alice through the
// credentials when she is offline, and with only --link and --creds through the names the
// mesh publishes; her DMs wait for her next tail.
func TestSendByNameReachesAnOfflineAgent(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	alice, _ := mintCreds(t, bin, dir, "alice", "--subscribe", "general")
	bob, _ := mintCreds(t, bin, dir, "bob", "--subscribe", "general")
	_, carolID := mintCreds(t, bin, dir, "carol")
	_, upperCarolID := mintCreds(t, bin, dir, "Carol", "--out", filepath.Join(dir, "Carol2.creds"))

	runCases(t, bin, []cliCase{
		{name: "beside up, a DM to an offline agent by name is stored",
			args: []string{"send", "--dir", dir, "@alice", "while you were away"}, stdout: []string{" in DM_main"}},
		{name: "with a credential of its own, too",
			args: []string{"send", "--dir", dir, "--creds", bob, "@alice", "from bob"}, stdout: []string{" in DM_main"}},
		{name: "with only --link and --creds, too",
			args: []string{"send", "--link", up.link, "--creds", bob, "@alice", "by link"}, stdout: []string{" in DM_main"}},
		{name: "with only --link and --creds a name no credential carries is refused",
			args: []string{"send", "--link", up.link, "--creds", bob, "@nobody", "lost"}, code: exitError,
			stderr: []string{"@nobody: no instance has that name", "was minted with that name", "instance id"}},
		{name: "a name no credential carries is refused",
			args: []string{"send", "--dir", dir, "@nobody", "x"}, code: exitError,
			stderr: []string{"@nobody: no instance has that name", "no active agent of space main was minted with that name"}},
		{name: "a name two active agents share is refused with both ids",
			args: []string{"send", "--dir", dir, "@carol", "x"}, code: exitError,
			stderr: []string{"more than one instance has that name", carolID, upperCarolID, "by id"}},
	})

	tail := startStream(t, bin, "tail", "--link", up.link, "--creds", alice)
	tail.waitLine(t, "dm", "while you were away")
	tail.waitLine(t, "dm bob", "from bob")
	tail.waitLine(t, "dm bob", "by link")
	tail.interrupt(t)
}

// TestSendByNameIgnoresAPeerThatTakesTheName: mallory, minted as mallory, connects calling
// herself bob while bob is offline. Beside `cotal up`, `send @bob` goes to the credential
// minted as bob: bob's next tail reads it, and mallory receives nothing.
func TestSendByNameIgnoresAPeerThatTakesTheName(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	bob, _ := mintCreds(t, bin, dir, "bob", "--subscribe", "general")
	mallory, _ := mintCreds(t, bin, dir, "mallory", "--subscribe", "general")
	creds, err := os.ReadFile(mallory)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan endpoint.Delivery, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := endpoint.Connect(ctx, endpoint.Options{Link: up.link, Creds: creds, Name: "bob",
		Handler: func(_ context.Context, d endpoint.Delivery) error { got <- d; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close(context.Background())
	runCases(t, bin, []cliCase{{name: "beside up, @bob is the credential minted as bob",
		args: []string{"send", "--dir", dir, "@bob", "the password is hunter2"}, stdout: []string{" in DM_main"}},
		{name: "with only --link and --creds, even the impostor's own, @bob is bob",
			args: []string{"send", "--link", up.link, "--creds", mallory, "@bob", "from the impostor"}, stdout: []string{" in DM_main"}}})
	tail := startStream(t, bin, "tail", "--link", up.link, "--creds", bob)
	tail.waitLine(t, "dm", "the password is hunter2")
	tail.waitLine(t, "dm", "from the impostor")
	tail.interrupt(t)
	select {
	case d := <-got:
		t.Fatalf("mallory, calling herself bob, received %s: %+v", d.Meta.Kind, d.Message)
	default:
	}
}

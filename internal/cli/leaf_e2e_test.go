package cli

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testcert"
	"github.com/cotal-go/cotal/space/spacetest"
)

// TestALaptopUpProcessJoinsAHubAsALeaf runs the commands of docs/leaf.md as two `cotal up`
// processes on loopback: the hub mints the laptop's link credential (0600), a post on either
// side reads back from the other's history, `cotal status` on the laptop shows the link up,
// and, once the hub stops, shows it down while the laptop stays healthy and its own agents keep
// posting. `send @NAME` on the hub reaches a laptop agent. A plain nats-server that dials the hub's leaf port with no credential, or with an
// agent's, is refused.
func TestALaptopUpProcessJoinsAHubAsALeaf(t *testing.T) {
	t.Parallel()
	bin := cotalBin(t)
	hubDir, laptopDir, leafAddr := t.TempDir(), t.TempDir(), spacetest.FreeAddr(t)
	leafCreds := filepath.Join(t.TempDir(), "laptop-leaf.creds")
	hub := launchUp(t, bin, hubDir, "--leaf-listen", leafAddr)
	hub.waitLink(t)
	cotal(t, bin, "auth", "mint", "--dir", hubDir, "--profile", "leaf", "--name", "laptop", "--no-expiry", "--out", leafCreds)
	if fi, err := os.Stat(leafCreds); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the leaf credential file: %v, %v; want mode 0600", fi, err)
	}
	laptop := launchUp(t, bin, laptopDir, "--leaf-hub", "nats-leaf://"+leafAddr, "--leaf-creds", "main="+leafCreds)
	laptop.waitLink(t)
	// The banner goes on after the join link.
	for p, want := range map[*upProcess]string{hub: "leaf:     hub; leaf meshes connect to nats-leaf://", laptop: "leaf:     leaf of nats-leaf://"} {
		await.True(t, 10*time.Second, "the banner line "+want, func() bool { return strings.Contains(p.out.String(), want) })
	}

	hubbie, lappie := filepath.Join(t.TempDir(), "hubbie.creds"), filepath.Join(t.TempDir(), "lappie.creds")
	cotal(t, bin, "auth", "mint", "--dir", hubDir, "--name", "hubbie", "--subscribe", "general", "--allow-publish", "general", "--out", hubbie)
	cotal(t, bin, "auth", "mint", "--dir", laptopDir, "--name", "lappie", "--subscribe", "general", "--allow-publish", "general", "--out", lappie)
	statusSays(t, bin, laptopDir, "space main link: up to ")
	for name, creds := range map[string]string{"no credential": "", "an agent's credential": hubbie} {
		refusesARogueLeaf(t, name, leafAddr, creds)
	}

	cotal(t, bin, "send", "--link", laptop.link, "--creds", lappie, "general", "hello from the laptop")
	historyHas(t, bin, hub.link, hubbie, "hello from the laptop")
	cotal(t, bin, "send", "--link", hub.link, "--creds", hubbie, "general", "hello from the hub")
	historyHas(t, bin, laptop.link, lappie, "hello from the hub")

	// A laptop agent's name was minted on the laptop; the hub finds it by its display name
	// among the instances it never minted, with a credential and beside its `cotal up`.
	tail := startStream(t, bin, "tail", "--link", laptop.link, "--creds", lappie)
	for i, args := range [][]string{{"--link", hub.link, "--creds", hubbie}, {"--dir", hubDir}} {
		text := fmt.Sprintf("dm by name across the link %d", i)
		await.Check(t, 30*time.Second, 200*time.Millisecond, func() error {
			if out, errOut, code := runCotal(t, bin, append(append([]string{"send"}, args...), "@lappie", text)...); code != 0 {
				return fmt.Errorf("send @lappie %v exited %d:\n%s%s", args, code, out, errOut)
			}
			return nil
		})
		tail.waitLine(t, "dm", text)
	}

	hub.stop(t)
	statusSays(t, bin, laptopDir, "space main link: DOWN")
	cotal(t, bin, "send", "--link", laptop.link, "--creds", lappie, "general", "while the hub is down")
	historyHas(t, bin, laptop.link, lappie, "while the hub is down")
	laptop.stop(t)
}

// cotal runs one command and fails the test unless it exits 0.
func cotal(t *testing.T, bin string, args ...string) {
	t.Helper()
	if out, errOut, code := runCotal(t, bin, args...); code != 0 {
		t.Fatalf("cotal %v exited %d:\n%s%s", args, code, out, errOut)
	}
}

// statusSays waits until `cotal status` on dir exits 0 (healthy) with want in its output.
func statusSays(t *testing.T, bin, dir, want string) {
	t.Helper()
	await.Check(t, 30*time.Second, 100*time.Millisecond, func() error {
		out, errOut, code := runCotal(t, bin, "status", "--dir", dir)
		if code != 0 || !strings.Contains(out, want) {
			return fmt.Errorf("status exited %d without %q:\n%s%s", code, want, out, errOut)
		}
		return nil
	})
}

// historyHas waits until the channel general's history read through link holds text.
func historyHas(t *testing.T, bin, link, creds, text string) {
	t.Helper()
	// Longer than one history run may wait for a stream leader (readWait), so one slow run
	// on a busy machine is retried rather than failing the test.
	await.Check(t, 3*readWait, 100*time.Millisecond, func() error {
		out, errOut, code := runCotal(t, bin, "history", "--link", link, "--creds", creds, "general")
		if code != 0 || !strings.Contains(out, text) {
			return fmt.Errorf("history through %s exited %d without %q:\n%s%s", link, code, text, out, errOut)
		}
		return nil
	})
}

// TestALeafLinkTakesTLS runs the hub with the client listener's certificate, which its leaf
// listener then takes too, and the laptop dialling tls://, trusting the hub's self-signed
// certificate through SSL_CERT_FILE as it would a CA's through the system roots.
func TestALeafLinkTakesTLS(t *testing.T) {
	bin := cotalBin(t)
	cert, key := testcert.Write(t, "cotal test hub")
	t.Setenv("SSL_CERT_FILE", cert) // not parallel: every process started here inherits it
	hubDir, laptopDir, leafAddr := t.TempDir(), t.TempDir(), spacetest.FreeAddr(t)
	leafCreds := filepath.Join(t.TempDir(), "laptop-leaf.creds")
	hub := launchUp(t, bin, hubDir, "--tls-cert", cert, "--tls-key", key, "--leaf-listen", leafAddr)
	hub.waitLink(t)
	await.True(t, 10*time.Second, "the hub's banner to name a tls:// leaf URL", func() bool {
		return strings.Contains(hub.out.String(), "leaf meshes connect to tls://")
	})
	cotal(t, bin, "auth", "mint", "--dir", hubDir, "--profile", "leaf", "--name", "laptop", "--out", leafCreds)
	laptop := launchUp(t, bin, laptopDir, "--leaf-hub", "tls://"+leafAddr, "--leaf-creds", "main="+leafCreds)
	laptop.waitLink(t)
	statusSays(t, bin, laptopDir, "space main link: up to ")
	laptop.stop(t)
	hub.stop(t)
}

// refusesARogueLeaf dials the hub's leaf listener at addr from a plain nats-server holding
// creds (none if empty) and fails the test unless the hub refuses the link.
func refusesARogueLeaf(t *testing.T, name, addr, creds string) {
	t.Helper()
	rogue, log := spacetest.Rogue(t, server.Options{LeafNode: server.LeafNodeOpts{ReconnectInterval: 100 * time.Millisecond,
		Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{{Scheme: "nats-leaf", Host: addr}}, Credentials: creds}}}})
	await.True(t, 30*time.Second, "the hub to refuse a rogue leaf with "+name, func() bool { return log.Has("authorization violation") })
	if n := rogue.NumLeafNodes(); n != 0 {
		t.Errorf("a rogue leaf with %s linked to the hub:\n%s", name, log)
	}
}

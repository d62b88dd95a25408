package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// netLab is a private network of network namespaces, one per node, each joined by a veth pair
// to one bridge in the test's own namespace, which holds the bridge's address: the test
// reaches every node, and a node reaches another through the bridge. It is made with iproute2
// alone (`ip netns`, `ip link`, `ip route`), so it needs root and `ip`, nothing else.
//
// Names and the subnet are drawn at random, so parallel runs do not collide; everything is
// removed at cleanup, also when the test fails.
type netLab struct {
	t      *testing.T
	bridge string
	ns     []string // namespace per node
	hosts  []string // the node's address in its namespace
	cut    [][]string
}

// newNetLab builds a lab of n nodes, or skips the test saying why it cannot.
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the partition test builds network namespaces, which needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the partition test builds network namespaces with iproute2's ip, which is not installed")
	}
	id := fmt.Sprintf("cx%04x", rand.IntN(1<<16))
	subnet := fmt.Sprintf("10.%d.%d", 200+rand.IntN(50), rand.IntN(256))
	l := &netLab{t: t, bridge: id + "br"}
	t.Cleanup(l.remove)
	if out, err := exec.Command("ip", "link", "add", l.bridge, "type", "bridge").CombinedOutput(); err != nil {
		t.Skipf("cannot create a bridge here (%v: %s): the partition test needs network namespaces", err, strings.TrimSpace(string(out)))
	}
	l.ip("addr", "add", subnet+".1/24", "dev", l.bridge)
	l.ip("link", "set", l.bridge, "up")
	for i := range n {
		ns, host, peer := fmt.Sprintf("cotal-%s-%d", id, i+1), fmt.Sprintf("%sh%d", id, i+1), fmt.Sprintf("%sn%d", id, i+1)
		addr := fmt.Sprintf("%s.%d", subnet, i+2)
		l.ip("netns", "add", ns)
		l.ns, l.hosts = append(l.ns, ns), append(l.hosts, addr)
		l.ip("link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns)
		l.ip("link", "set", host, "master", l.bridge)
		l.ip("link", "set", host, "up")
		l.ip("-n", ns, "addr", "add", addr+"/24", "dev", peer)
		l.ip("-n", ns, "link", "set", peer, "up")
		l.ip("-n", ns, "link", "set", "lo", "up")
	}
	return l
}

// ip runs one ip command, failing the test with its output.
func (l *netLab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// exec is the command prefix that runs a program in node i's namespace.
func (l *netLab) exec(i int) []string { return []string{"ip", "netns", "exec", l.ns[i]} }

// isolate cuts node i off from every other node, both ways, and leaves the test's own links
// to every node up: each side drops the packets it would send to the other (a blackhole
// route), as a failed switch port would, so connections stall rather than being refused.
func (l *netLab) isolate(i int) {
	l.t.Helper()
	for j := range l.ns {
		if j == i {
			continue
		}
		for _, r := range [][]string{{"-n", l.ns[i], "route", "add", "blackhole", l.hosts[j] + "/32"},
			{"-n", l.ns[j], "route", "add", "blackhole", l.hosts[i] + "/32"}} {
			l.ip(r...)
			l.cut = append(l.cut, r)
		}
	}
}

// heal removes every route isolate added.
func (l *netLab) heal() {
	l.t.Helper()
	for _, r := range l.cut {
		del := append([]string{}, r...)
		del[3] = "del" // -n NS route add …
		l.ip(del...)
	}
	l.cut = nil
}

// remove deletes the namespaces, with their veth ends and routes, and the bridge.
func (l *netLab) remove() {
	for _, ns := range l.ns {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			l.t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	}
	if out, err := exec.Command("ip", "link", "del", l.bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find") {
		l.t.Errorf("ip link del %s: %v: %s", l.bridge, err, out)
	}
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

const titleCluster = "11. Cluster DM"

// clusterNodes is the size of the cluster row's cluster: the smallest that makes every stream
// R3.
const clusterNodes = 3

// clusterNote says what the row's two columns are: both sides are cotal.
const clusterNote = "cotal = a three-node in-process cluster (R3 memory streams), sender on node 1, " +
	"receiver on node 3; raw = the same cotal DM workload on one node. cotal/raw is cluster/single."

var (
	figClusterRate = figure{key: "rate", metric: "surfaced+acked msgs/s", unit: "msgs/s"}
	figClusterP50  = figure{key: "p50", metric: "p50 latency, one in flight", unit: "µs"}
)

// clusterCases is row 2 through a cluster: the smallest payload only, the cluster's cost being
// per message rather than per byte.
func clusterCases(c Config) []Case {
	size := slices.Min(c.Payloads)
	name := fmt.Sprintf("%s, node 1 → node 3, R3 vs one node", sizeName(size))
	return []Case{{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
		single, err := startSingle(ctx)
		if err != nil {
			return nil, err
		}
		defer closeMeshes(single)
		nodes, err := startCluster(ctx)
		if err != nil {
			return nil, err
		}
		defer closeMeshes(nodes...)
		text := payload(size)
		// Both sides connect over loopback TCP: a cluster node's agents do, and the single
		// node's must too, or the ratio would include the TCP hop.
		rows, err := s.pair(ctx, titleCluster, name, []figure{figClusterRate, figCPU, figClusterP50, figP99},
			clusterDM{s: s, keys: nodes[0], from: nodes[0], to: nodes[clusterNodes-1], text: text}.run,
			clusterDM{s: s, keys: single, from: single, to: single, text: text}.run)
		for i := range rows {
			rows[i].Note = clusterNote
		}
		return rows, err
	}}}
}

// clusterDM is one side of the cluster row: a DM sender connected to from and a receiver
// connected to to, both minted on keys, the node holding the key store.
type clusterDM struct {
	s              *suite
	keys, from, to *space.Mesh
	text           string
}

func (c clusterDM) run(ctx context.Context, run int) (figures, error) {
	var got tally
	pr := newProbe(1)
	var eps []*endpoint.Endpoint
	defer func() { closeAll(eps) }()
	recv, err := c.connect(ctx, c.to, fmt.Sprintf("recv-r%d", run),
		func(context.Context, endpoint.Delivery) error { got.add(); pr.hit(); return nil })
	if err != nil {
		return nil, err
	}
	eps = append(eps, recv)
	sender, err := c.connect(ctx, c.from, fmt.Sprintf("sender-r%d", run), nil)
	if err != nil {
		return nil, err
	}
	eps = append(eps, sender)
	parts := []wire.Part{wire.TextPart(c.text)}
	lat, err := pr.rounds(ctx, c.s.cfg.LatencyRounds, 1,
		func(ctx context.Context) error { _, err := sender.SendDM(ctx, recv.ID(), parts); return err })
	if err != nil {
		return nil, err
	}
	msgs := c.s.cfg.Messages
	base := got.count()
	start, cpu := time.Now(), startCPU()
	pending := make([]*endpoint.PendingReceipt, 0, msgs)
	for range msgs {
		p, err := sender.SendDMAsync(recv.ID(), parts)
		if err != nil {
			return nil, err
		}
		pending = append(pending, p)
	}
	if err := waitReceipts(ctx, pending); err != nil {
		return nil, err
	}
	if err := got.waitCount(ctx, base+int64(msgs)); err != nil {
		return nil, err
	}
	// The receiver's dm_<id> holds nothing unacked, as row 2's clock requires; the key-store
	// node reads the consumer, which every node of the cluster replicates.
	if err := await(ctx, "receiver's DM consumer drained", got.count, func() (bool, error) {
		b, err := c.keys.Pending(ctx, benchSpace, recv.ID())
		if err != nil {
			return false, err
		}
		return b.DM.Pending == 0 && b.DM.AckPending == 0, nil
	}); err != nil {
		return nil, err
	}
	f := figures{"rate": rate(int64(msgs), time.Since(start))}
	cpu.perMessage(f, int64(msgs))
	latencyFigures(f, lat)
	return f, nil
}

// connect mints an agent credential named name on the key-store node and connects it to node
// over TCP.
func (c clusterDM) connect(ctx context.Context, node *space.Mesh, name string, h endpoint.Handler) (*endpoint.Endpoint, error) {
	cred, err := c.keys.Mint(ctx, provisioner.MintRequest{Space: benchSpace, Name: name,
		Profile: provisioner.ProfileAgent})
	if err != nil {
		return nil, fmt.Errorf("mint %s: %w", name, err)
	}
	creds, err := cred.Creds()
	if err != nil {
		return nil, err
	}
	link, err := node.Link(benchSpace)
	if err != nil {
		return nil, err
	}
	return endpoint.Connect(ctx, endpoint.Options{Link: link, Creds: creds, Name: name, Handler: h})
}

// startSingle starts one authenticated memory node with a loopback client listener, the
// cluster row's baseline.
func startSingle(ctx context.Context) (*space.Mesh, error) {
	m, err := space.Start(ctx, space.Options{Spaces: []string{benchSpace}, Memory: true, Listen: "127.0.0.1:0"})
	if err != nil {
		return nil, fmt.Errorf("start the single node: %w", err)
	}
	return m, nil
}

// startCluster starts clusterNodes authenticated memory meshes as one cluster on loopback,
// as space's cluster tests do: node 0 holds the key store and writes the trust file the others
// start from; they start together, since JetStream needs every peer before it elects a leader.
// The data directories, which hold only the trust file, are removed when node 0 closes.
func startCluster(ctx context.Context) ([]*space.Mesh, error) {
	base, err := os.MkdirTemp("", "cotal-bench-cluster-")
	if err != nil {
		return nil, err
	}
	peers := make([]string, clusterNodes)
	for i := range peers {
		if peers[i], err = freeAddr(); err != nil {
			return nil, errors.Join(err, os.RemoveAll(base))
		}
	}
	opts := func(i int) space.Options {
		dir := filepath.Join(base, fmt.Sprint("node", i+1))
		o := space.Options{Dir: dir, Spaces: []string{benchSpace}, Memory: true, Listen: "127.0.0.1:0",
			Cluster: space.ClusterOptions{Name: "bench", Listen: peers[i], Peers: peers, ServerName: fmt.Sprint("node", i+1)}}
		if i > 0 {
			o.Cluster.Trust = filepath.Join(base, "node1", space.TrustFile)
		}
		return o
	}
	nodes := make([]*space.Mesh, clusterNodes)
	errs := make([]error, clusterNodes)
	var wg sync.WaitGroup
	wg.Go(func() { nodes[0], errs[0] = space.Start(ctx, opts(0)) })
	trust := filepath.Join(base, "node1", space.TrustFile)
	for {
		if _, err := os.Stat(trust); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			closeMeshes(nodes...)
			return nil, errors.Join(fmt.Errorf("the key-store node wrote no trust file: %w", ctx.Err()), os.RemoveAll(base))
		case <-time.After(pollEvery):
		}
	}
	for i := 1; i < clusterNodes; i++ {
		wg.Go(func() { nodes[i], errs[i] = space.Start(ctx, opts(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeMeshes(nodes...)
		return nil, errors.Join(fmt.Errorf("start the cluster: %w", err), os.RemoveAll(base))
	}
	return nodes, nil
}

// freeAddr is a loopback address with a port free a moment ago, for a route listener every
// node must know before any starts.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// closeMeshes closes meshes together (a clustered node leaving hands over its leaderships
// first, which is quicker when the others leave too) and removes the cluster's directories.
func closeMeshes(meshes ...*space.Mesh) {
	ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range meshes {
		if m != nil {
			wg.Go(func() { _ = m.Close(ctx) })
		}
	}
	wg.Wait()
	if len(meshes) > 1 && meshes[0] != nil {
		_ = os.RemoveAll(filepath.Dir(meshes[0].Dir()))
	}
}

package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// loadChannels are the durable channels of the load test; every agent starts reading all.
var loadChannels = []string{"load.c0", "load.c1", "load.c2", "load.c3", "load.c4", "load.c5"}

// loadRoles are the anycast roles; a quarter of the agents holds each.
var loadRoles = []string{"ra", "rb"}

// loadAgent is one identity of the load test. Its nkey survives re-mints, which replace its
// credential and so its incarnation (SPEC §2, §9 item 6).
type loadAgent struct {
	w    *world
	m    *space.Mesh
	name string
	kp   nkeys.KeyPair
	id   string
	role string

	mu      sync.Mutex // one action or re-mint at a time
	inc     *incarnation
	joined  []string
	remints int
}

// incarnation is one Endpoint of an agent, bound to one credential and its read ACL.
type incarnation struct {
	name string
	ep   *endpoint.Endpoint
	acl  []string
	cut  atomic.Pointer[time.Time] // when the credential was revoked by a re-mint
}

func (i *incarnation) cutAt() time.Time {
	if t := i.cut.Load(); t != nil {
		return *t
	}
	return time.Time{}
}

// TestLoadKeepsACLAndMembershipInvariants runs tier.loadEndpoints agents on one mesh for
// tier.loadFor: random joins (some outside the read ACL), leaves, channel publishes, DMs,
// anycasts, and re-mints that narrow an agent's read ACL and cut its old credential off.
// Checked at every surfacing: no channel content outside the receiver's ACL (SPEC §9), nothing
// published after a credential's revocation reaches it (SPEC §9 item 6), no durable copy after
// a leave (SPEC §7). Checked at the end: every acknowledged DM and anycast surfaced, every
// durable message surfaced at every eligible member (SPEC §4), nothing twice per incarnation.
func TestLoadKeepsACLAndMembershipInvariants(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t)
	rng := newRand(t)
	w := newWorld()
	agents := make([]*loadAgent, tier.loadEndpoints)
	holders := map[string][]string{}
	for i := range agents {
		a := &loadAgent{w: w, m: m, name: fmt.Sprintf("a%02d", i)}
		if i%4 < len(loadRoles) {
			a.role = loadRoles[i%4]
		}
		a.start(t)
		agents[i] = a
		holders[a.role] = append(holders[a.role], a.id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tier.loadFor)
	defer cancel()
	var wg sync.WaitGroup
	for i, a := range agents {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		wg.Go(func() { a.act(ctx, t, r, agents) })
	}
	wg.Go(func() { remintSchedule(ctx, t, rng, agents) })
	wg.Wait()

	audience := w.audience(holders)
	drained := await.Until(tier.drain, func() bool { return chaos.Check(w.publishes(), w.surfacings(), audience).Lost == 0 })
	f := chaos.Check(w.publishes(), w.surfacings(), audience)
	w.checkJoinBounds()
	w.mu.Lock()
	counts, violations, kinds := w.counts, w.violations, w.kinds
	w.mu.Unlock()
	var byKind []string
	for k, n := range kinds {
		byKind = append(byKind, fmt.Sprintf("%d × %q", n, k))
	}
	slices.Sort(byKind)
	record(t, fmt.Sprintf("load: %d endpoints for %v", tier.loadEndpoints, tier.loadFor), joinNotes(deliveryFigures(f),
		fmt.Sprintf("**invariant violations %d** %s", counts["violations"], strings.Join(byKind, ", ")),
		fmt.Sprintf("joins %d (refused outside the ACL %d, durable backstop unavailable %d, failed %d), leaves %d (failed %d), narrowing re-mints %d (connects retried %d); publishes: channel %d, dm %d, anycast %d",
			counts["join"], counts["refused"], counts["live-only join"], counts["join error"], counts["leave"], counts["leave error"], counts["remint"], counts["connect error"],
			counts["publish channel"], counts["publish dm"], counts["publish anycast"])))
	for _, v := range violations {
		t.Error(v)
	}
	if err := f.Err(); err != nil {
		t.Errorf("drained %v: %v", drained, err)
	}
}

// start mints the agent's first credential, reading every load channel, and connects it.
func (a *loadAgent) start(t *testing.T) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	a.kp = kp
	if a.id, err = kp.PublicKey(); err != nil {
		t.Fatal(err)
	}
	if err := a.connect([]string{"load.>"}); err != nil {
		t.Fatal(err)
	}
}

// connect mints a credential for the agent's key with read ACL acl, which revokes the previous
// one, and connects a new incarnation with it. a.mu is held, or the agent is not running yet.
func (a *loadAgent) connect(acl []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cred, err := a.m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: a.name, Profile: provisioner.ProfileAgent,
		Grants:   provisioner.Grants{AllowSubscribe: acl, AllowPublish: []string{"load.>"}, Role: a.role},
		NoExpiry: true, Identity: a.kp})
	if err != nil {
		return fmt.Errorf("mint %s: %w", a.name, err)
	}
	cut := time.Now()
	creds, err := cred.Creds()
	if err != nil {
		return err
	}
	inc := &incarnation{name: fmt.Sprintf("%s.%d", a.name, a.remints), acl: acl}
	old := a.inc
	if old != nil {
		old.cut.Store(&cut)
	}
	a.w.mu.Lock()
	a.w.finalACL[a.id] = acl
	a.w.mu.Unlock()
	opts := endpoint.Options{InProcess: a.m.InProcess(), Space: "main", Creds: creds,
		Handler: func(_ context.Context, d endpoint.Delivery) error {
			a.w.surfaced(a.id, inc, d)
			return nil
		}}
	// A connect can fail on a transient JetStream error under load; an agent tries again.
	for inc.ep, err = endpoint.Connect(ctx, opts); err != nil; inc.ep, err = endpoint.Connect(ctx, opts) {
		a.w.count("connect error")
		if ctx.Err() != nil {
			return fmt.Errorf("connect %s: %w", inc.name, err)
		}
	}
	a.inc = inc
	return nil
}

// act performs random actions until ctx ends, then leaves the agent connected for the drain.
func (a *loadAgent) act(ctx context.Context, t *testing.T, r *rand.Rand, agents []*loadAgent) {
	for ctx.Err() == nil {
		a.mu.Lock()
		a.step(t, r, agents)
		a.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(between(r, 20*time.Millisecond, 150*time.Millisecond)): // pacing
		}
	}
}

// step is one random action of the agent's current incarnation.
func (a *loadAgent) step(t *testing.T, r *rand.Rand, agents []*loadAgent) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch n := r.IntN(10); {
	case n < 2:
		a.join(ctx, t, loadChannels[r.IntN(len(loadChannels))])
	case n < 3 && len(a.joined) > 0:
		a.leave(ctx, t, a.joined[r.IntN(len(a.joined))])
	case n < 6:
		a.publish(ctx, t, chaos.KindChannel, loadChannels[r.IntN(len(loadChannels))])
	case n < 8:
		a.publish(ctx, t, chaos.KindDM, agents[r.IntN(len(agents))].id)
	default:
		a.publish(ctx, t, chaos.KindAnycast, loadRoles[r.IntN(len(loadRoles))])
	}
}

// join joins channel and checks the broker's verdict against the incarnation's ACL (SPEC §7).
func (a *loadAgent) join(ctx context.Context, t *testing.T, channel string) {
	sanitized := wire.SanitizeChannel(channel)
	already := slices.Contains(a.joined, sanitized)
	start, ends := a.w.joinBegins(a.id, sanitized)
	defer ends()
	res, err := a.inc.ep.Join(ctx, channel)
	allowed := covers(a.inc.acl, channel)
	switch {
	case errors.Is(err, endpoint.ErrJoinRefused) && !allowed:
		a.w.count("refused")
	case errors.Is(err, endpoint.ErrJoinRefused):
		a.w.violate("%s: join %s refused inside its read ACL %v: %v", a.inc.name, channel, a.inc.acl, err)
	case err != nil:
		a.w.count("join error")
		t.Logf("%s: join %s failed: %v", a.inc.name, channel, err)
	case !allowed:
		a.w.violate("%s joined %s outside its read ACL %v", a.inc.name, channel, a.inc.acl)
	case already:
		// Join reported the standing membership; nothing changed
	default:
		if res.State != endpoint.JoinedDurable {
			a.w.count("live-only join")
		}
		a.w.joined(a.id, res.Channel, start, res.State == endpoint.JoinedDurable)
		a.joined = append(a.joined, res.Channel)
	}
}

// leave leaves channel and asks the delivery service whether a membership is still active
// (SPEC §7: leave ends the durable membership).
// A Leave that fails leaves the membership open in the world's view, so later durable copies
// are not counted against it.
func (a *loadAgent) leave(ctx context.Context, t *testing.T, channel string) {
	start := time.Now()
	err := a.inc.ep.Leave(ctx, channel)
	a.joined = slices.DeleteFunc(a.joined, func(c string) bool { return c == channel })
	if err != nil {
		a.w.count("leave error")
		t.Logf("%s: leave %s failed: %v", a.inc.name, channel, err)
		return
	}
	a.w.left(a.id, channel, start)
	if active, err := a.memberships(ctx); err != nil {
		t.Logf("%s: listMemberships failed: %v", a.inc.name, err)
	} else if slices.Contains(active, channel) {
		a.w.violate("%s: the durable membership of %s is still active after Leave returned", a.inc.name, channel)
	}
}

// memberships lists the agent's active durable memberships (listMemberships, docs/storage.md
// "Control service").
func (a *loadAgent) memberships(ctx context.Context) ([]string, error) {
	r, err := a.inc.ep.Request(ctx, wire.DeliveryService, wire.OpListMemberships, nil)
	if err != nil {
		return nil, err
	}
	var list struct {
		Memberships []struct{ Channel string } `json:"memberships"`
	}
	if err := json.Unmarshal(r.Data, &list); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range list.Memberships {
		out = append(out, m.Channel)
	}
	return out, nil
}

// publish sends one message of kind to target, recorded before it is sent.
func (a *loadAgent) publish(ctx context.Context, t *testing.T, kind, target string) {
	id := wire.NewMessageID()
	a.w.published(id, kind, target, a.id)
	parts, opt := text("load "+id), endpoint.WithMessageID(id)
	var err error
	switch kind {
	case chaos.KindChannel:
		_, err = a.inc.ep.Send(ctx, target, parts, opt)
	case chaos.KindDM:
		_, err = a.inc.ep.SendDM(ctx, target, parts, opt)
	default:
		_, err = a.inc.ep.SendAnycast(ctx, target, parts, opt)
	}
	if err != nil {
		t.Errorf("%s: %s to %s: %v", a.inc.name, kind, target, err)
		return
	}
	a.w.acked(id)
}

// remintSchedule narrows tier.remints agents' read ACLs at random moments while they act; each
// re-mint runs on its own, since reconnecting and rejoining takes a while.
func remintSchedule(ctx context.Context, t *testing.T, r *rand.Rand, agents []*loadAgent) {
	every := tier.loadFor / time.Duration(tier.remints+1)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range tier.remints {
		select {
		case <-ctx.Done():
			return
		case <-time.After(between(r, every/2, every)): // a random moment
		}
		a, rr := agents[r.IntN(len(agents))], rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
		wg.Go(func() { a.narrow(t, rr) })
	}
}

// narrow re-mints the agent with a read ACL of a random strict subset of what it reads now,
// checks that the old credential is cut off (SPEC §9 item 6), and reconnects with the new one,
// rejoining what it still may read.
func (a *loadAgent) narrow(t *testing.T, r *rand.Rand) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var readable []string
	for _, c := range loadChannels {
		if covers(a.inc.acl, c) {
			readable = append(readable, c)
		}
	}
	if len(readable) < 2 {
		return
	}
	r.Shuffle(len(readable), func(i, j int) { readable[i], readable[j] = readable[j], readable[i] })
	acl := readable[:1+r.IntN(len(readable)-1)]
	old := a.inc
	a.remints++
	if err := a.connect(acl); err != nil {
		t.Error(err)
		return
	}
	a.w.count("remint")
	if !await.Until(10*time.Second, func() bool { return !old.ep.Connected() }) {
		a.w.violate("%s is still connected 10 s after its credential was revoked by a re-mint", old.name)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = old.ep.Close(closeCtx) // its final presence write is refused: the credential is revoked
	cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kept := a.joined[:0]
	for _, c := range a.joined {
		if covers(acl, c) {
			kept = append(kept, c)
		}
	}
	a.joined = nil
	for _, c := range kept {
		a.join(ctx, t, c)
	}
}

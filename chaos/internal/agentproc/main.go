// Command agentproc is the chaos suite's stand-in for a remote agent: one process connected
// over TCP with a join link and a .creds file (SPEC §10), which the tests kill with SIGKILL at
// any instruction. It journals what it does (chaos.Journal) so the checker can classify every
// acknowledged publish.
//
// As a publisher (-publish N) it sends N numbered messages, cycling through the -dm, -anycast
// and -channel targets, journals each attempt before the send and each acknowledgement after
// it, then exits 0. As a receiver (the default) it joins -join and journals every surfaced
// message until SIGTERM; with -crash-after K it exits with status 3 inside the Handler right
// after journaling its K-th surfacing, before the copy is acknowledged.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// exitCrashed is the status of a receiver that crashed itself inside its Handler.
const exitCrashed = 3

type config struct {
	link, creds, journal, incarnation string
	publish                           int
	prefix                            string
	dms, roles, channels, join        []string
	gap, publishTimeout               time.Duration
	crashAfter                        int64
}

func main() {
	var c config
	var dms, roles, channels, join string
	flag.StringVar(&c.link, "link", "", "join link of the mesh (required)")
	flag.StringVar(&c.creds, "creds", "", ".creds file of the agent (required)")
	flag.StringVar(&c.journal, "journal", "", "journal file to append to (required)")
	flag.StringVar(&c.incarnation, "incarnation", "", "name of this process in the journal")
	flag.IntVar(&c.publish, "publish", 0, "publish this many messages, then exit")
	flag.StringVar(&c.prefix, "prefix", "msg", "message id prefix; ids are <prefix>-<n>")
	flag.StringVar(&dms, "dm", "", "comma-separated instance ids to send DMs to")
	flag.StringVar(&roles, "anycast", "", "comma-separated roles to anycast to")
	flag.StringVar(&channels, "channel", "", "comma-separated channels to multicast on")
	flag.StringVar(&join, "join", "", "comma-separated channels to join at connect")
	flag.DurationVar(&c.gap, "gap", 10*time.Millisecond, "pause between publishes")
	flag.DurationVar(&c.publishTimeout, "publish-timeout", time.Minute, "give up one publish after this long")
	flag.Int64Var(&c.crashAfter, "crash-after", 0, "exit inside the Handler after this many surfacings (0: never)")
	flag.Parse()
	c.dms, c.roles, c.channels, c.join = list(dms), list(roles), list(channels), list(join)
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "agentproc:", err)
		os.Exit(1)
	}
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func run(c config) error {
	if c.link == "" || c.creds == "" || c.journal == "" {
		return errors.New("-link, -creds and -journal are required")
	}
	id, err := instanceID(c.creds)
	if err != nil {
		return err
	}
	j, err := chaos.OpenJournal(c.journal)
	if err != nil {
		return err
	}
	defer j.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	opts := endpoint.Options{
		Link: c.link, CredsFile: c.creds, Channels: c.join,
		MaxReconnects: 100000, ReconnectWait: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if c.publish == 0 {
		opts.Handler = receiver(j, id, c.incarnation, c.crashAfter)
	}
	ep, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	if c.publish > 0 {
		err = publish(ctx, ep, j, c)
	} else {
		if err = journalJoins(ep, j, id, c); err == nil {
			<-ctx.Done()
		}
	}
	closeCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	return errors.Join(err, ep.Close(closeCtx))
}

// connect connects, retrying for a minute: the mesh may be down, or die while Connect runs,
// and a first connection is not retried by the client library.
func connect(ctx context.Context, opts endpoint.Options) (*endpoint.Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ep, err := endpoint.Connect(ctx, opts)
		if err == nil || ctx.Err() != nil {
			return ep, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// instanceID is the id bound to the credential (SPEC §2): its JWT subject, which its seed
// signs for.
func instanceID(credsFile string) (string, error) {
	data, err := os.ReadFile(credsFile)
	if err != nil {
		return "", err
	}
	c, err := endpoint.ParseCredential(data)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", credsFile, err)
	}
	return c.ID, nil
}

// receiver journals each surfacing and, at the crashAfter-th, exits before the Handler
// returns, so the copy is never acknowledged.
func receiver(j *chaos.Journal, id, incarnation string, crashAfter int64) endpoint.Handler {
	var n atomic.Int64
	return func(_ context.Context, d endpoint.Delivery) error {
		err := j.Write(chaos.Entry{Event: chaos.EventSurfaced, ID: d.Message.ID, Kind: string(d.Meta.Kind),
			Target: d.Meta.Channel, Receiver: id, Incarnation: incarnation,
			Durable: d.Meta.Durable, Historical: d.Meta.Historical})
		if err != nil {
			return err
		}
		if crashAfter > 0 && n.Add(1) == crashAfter {
			os.Exit(exitCrashed)
		}
		return nil
	}
}

// journalJoins journals the state each channel joined at connect reached.
func journalJoins(ep *endpoint.Endpoint, j *chaos.Journal, id string, c config) error {
	for _, ch := range c.join {
		st, _ := ep.JoinStatus(ch)
		err := j.Write(chaos.Entry{Event: chaos.EventJoined, Target: ch, Kind: string(st.State),
			Receiver: id, Incarnation: c.incarnation})
		if err != nil {
			return err
		}
	}
	return nil
}

// target is one destination of the publish cycle.
type target struct{ kind, to string }

func targets(c config) []target {
	var out []target
	for _, id := range c.dms {
		out = append(out, target{chaos.KindDM, id})
	}
	for _, r := range c.roles {
		out = append(out, target{chaos.KindAnycast, r})
	}
	for _, ch := range c.channels {
		out = append(out, target{chaos.KindChannel, ch})
	}
	return out
}

// publish sends c.publish numbered messages through the targets in turn. Each attempt is
// journaled before it is sent and its outcome after, so a kill between the two leaves an
// attempt whose outcome is unknown, as SPEC §4 allows.
func publish(ctx context.Context, ep *endpoint.Endpoint, j *chaos.Journal, c config) error {
	ts := targets(c)
	if len(ts) == 0 {
		return errors.New("-publish needs at least one -dm, -anycast or -channel target")
	}
	for i := range c.publish {
		t := ts[i%len(ts)]
		id := fmt.Sprintf("%s-%06d", c.prefix, i)
		if err := j.Write(chaos.Entry{Event: chaos.EventAttempt, ID: id, Kind: t.kind, Target: t.to}); err != nil {
			return err
		}
		r, err := send(ctx, ep, t, id, c.publishTimeout)
		e := chaos.Entry{Event: chaos.EventAcked, ID: id, Kind: t.kind, Target: t.to, Seq: r.Seq}
		if err != nil {
			e = chaos.Entry{Event: chaos.EventFailed, ID: id, Kind: t.kind, Target: t.to, Err: err.Error()}
		}
		if err := j.Write(e); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.gap):
		}
	}
	return nil
}

func send(ctx context.Context, ep *endpoint.Endpoint, t target, id string, timeout time.Duration) (endpoint.Receipt, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	parts := []wire.Part{wire.TextPart("chaos " + id)}
	switch t.kind {
	case chaos.KindDM:
		return ep.SendDM(ctx, t.to, parts, endpoint.WithMessageID(id))
	case chaos.KindAnycast:
		return ep.SendAnycast(ctx, t.to, parts, endpoint.WithMessageID(id))
	default:
		return ep.Send(ctx, t.to, parts, endpoint.WithMessageID(id))
	}
}

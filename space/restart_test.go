package space_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// TestRestartKeepsTrustStreamsAndCredentials stops a file-backed mesh and starts it again on
// the same directory: the operator and accounts, the streams with their sequences, and every
// credential minted or revoked before the restart must be exactly as they were.
func TestRestartKeepsTrustStreamsAndCredentials(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, n := t.TempDir(), wire.NewNames("main")

	first := startOn(ctx, t, dir)
	alice := mint(t, first, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	root := mint(t, first, "root", provisioner.ProfileAdmin, provisioner.Grants{})
	gone := mint(t, first, "mallory", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	if err := first.Revoke(ctx, "main", gone.ID); err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(t.TempDir(), "alice.creds")
	if err := provisioner.WriteCredsFile(credsFile, alice); err != nil {
		t.Fatal(err)
	}
	body := envelope(t, alice, "general", "kept across a restart")
	js := newPeer(t, first, alice).jetStream(t)
	ack, err := js.Publish(ctx, n.ChatSubject(alice.ID, "general"), body)
	if err != nil {
		t.Fatalf("publish before the restart: %v", err)
	}

	t.Run("a second mesh on the running mesh's directory fails fast with ErrLocked", func(t *testing.T) {
		if m, err := space.Start(ctx, space.Options{Dir: dir}); !errors.Is(err, provisioner.ErrLocked) {
			if m != nil {
				_ = m.Close(ctx)
			}
			t.Fatalf("second Start = %v; want %v", err, provisioner.ErrLocked)
		}
		if _, err := js.Publish(ctx, n.ChatSubject(alice.ID, "general"), envelope(t, alice, "general", "still up")); err != nil {
			t.Fatalf("the running mesh broke when a second one tried its directory: %v", err)
		}
	})

	if err := first.Close(ctx); err != nil {
		t.Fatalf("close the first mesh: %v", err)
	}
	before := trustOf(t, dir)
	second := startOn(ctx, t, dir)

	t.Run("the old .creds file still connects and finds its message at the same sequence", func(t *testing.T) {
		nc, err := nats.Connect("", nats.InProcessServer(second.InProcess()), nats.UserCredentials(credsFile),
			nats.CustomInboxPrefix(wire.InboxPrefix(alice.ID)))
		if err != nil {
			t.Fatalf("connect with the .creds of the first run: %v", err)
		}
		defer nc.Close()
		msg := firstInHistory(ctx, t, &peer{nc: nc, cred: alice}, n)
		meta, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if meta.Sequence.Stream != ack.Sequence || string(msg.Data()) != string(body) {
			t.Fatalf("CHAT holds %q at sequence %d; want %q at %d", msg.Data(), meta.Sequence.Stream, body, ack.Sequence)
		}
	})

	t.Run("the streams and bind-only consumers are still there", func(t *testing.T) {
		run(t, second, []confinementCase{
			{"the admin finds both messages of the first run in CHAT", root, holds(n.ChatStream(), 2), permitted},
			{"the admin inspects DM", root, api("$JS.API.STREAM.INFO."+n.DMStream(), nil), permitted},
			{"the agent inspects TASK", alice, api("$JS.API.STREAM.INFO."+n.TaskStream(), nil), permitted},
			{"the agent inspects the presence bucket", alice, api("$JS.API.STREAM.INFO."+wire.KVStream(n.PresenceBucket()), nil), permitted},
			{"the agent reads the channel registry", alice, registryGet(n), permitted},
			{"the agent binds its dm_", alice, bind(n.DMStream(), n.DMConsumer(alice.ID), false), permitted},
			{"the agent binds its dlv_", alice, bind(n.DLVStream(), n.DLVConsumer(alice.ID), false), permitted},
		})
	})

	t.Run("a credential revoked before the restart stays revoked", func(t *testing.T) {
		refusedConnect(t, second, gone)
	})

	if err := second.Close(ctx); err != nil {
		t.Fatalf("close the second mesh: %v", err)
	}
	if after := trustOf(t, dir); !sameTrust(t, before, after) {
		t.Fatalf("the restart changed the trust chain: operator %s, accounts %v before; operator %s, accounts %v after",
			operatorID(t, before), slices.Sorted(maps.Keys(before.Accounts)), operatorID(t, after), slices.Sorted(maps.Keys(after.Accounts)))
	}
}

// startOn starts a file-backed mesh on dir, closed at the end of the test if the test does
// not close it first.
func startOn(ctx context.Context, t *testing.T, dir string) *space.Mesh {
	t.Helper()
	m, err := space.Start(ctx, space.Options{Dir: dir})
	if err != nil {
		t.Fatalf("start the mesh on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// trustOf reads the trust chain from dir's key store; no mesh may hold the store.
func trustOf(t *testing.T, dir string) provisioner.Trust {
	t.Helper()
	s, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr, err := s.Trust()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func sameTrust(t *testing.T, a, b provisioner.Trust) bool {
	return operatorID(t, a) == operatorID(t, b) && a.SystemAccount == b.SystemAccount &&
		slices.Equal(slices.Sorted(maps.Keys(a.Accounts)), slices.Sorted(maps.Keys(b.Accounts)))
}

func operatorID(t *testing.T, tr provisioner.Trust) string {
	t.Helper()
	op, err := jwt.DecodeOperatorClaims(tr.OperatorJWT)
	if err != nil {
		t.Fatal(err)
	}
	return op.Subject
}

// holds requires stream to hold msgs messages, read through its STREAM.INFO.
func holds(stream string, msgs uint64) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		s, err := p.jetStream(t).Stream(ctx, stream)
		if err != nil {
			return p.explain(err)
		}
		if got := s.CachedInfo().State.Msgs; got != msgs {
			return fmt.Errorf("%s holds %d messages; want %d", stream, got, msgs)
		}
		return nil
	}
}

// firstInHistory reads the first message of general through p's pinned history consumer.
func firstInHistory(ctx context.Context, t *testing.T, p *peer, n wire.Names) jetstream.Msg {
	t.Helper()
	js := p.jetStream(t)
	name := n.HistoryConsumer(p.cred.ID)
	cons, err := js.CreateConsumer(ctx, n.ChatStream(), jetstream.ConsumerConfig{Name: name,
		FilterSubject: n.ChatFilter("general"), AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true})
	if err != nil {
		t.Fatal(p.explain(err))
	}
	defer js.DeleteConsumer(ctx, n.ChatStream(), name)
	msg, err := cons.Next(jetstream.FetchMaxWait(answerWait))
	if err != nil {
		t.Fatal(p.explain(err))
	}
	return msg
}

package space_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

func TestStartProvisionsTheLayout(t *testing.T) {
	m := spacetest.New(t)
	admin := mint(t, m, "root", provisioner.ProfileAdmin, provisioner.Grants{})
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"team.>"}, AllowPublish: []string{"team.backend"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(connect(t, m, alice))
	if err != nil {
		t.Fatal(err)
	}
	n := wire.NewNames("main")
	msg := wire.CotalMessage{ID: wire.NewMessageID(), TS: time.Now().UnixMilli(), Space: "main",
		From: wire.EndpointRef{ID: alice.ID, Name: "alice"}, Channel: "team.backend",
		Parts: []wire.Part{wire.TextPart("hello")}}
	data, _ := json.Marshal(msg)
	ack, err := js.Publish(ctx, n.ChatSubject(alice.ID, "team.backend"), data, jetstream.WithMsgID(msg.ID))
	if err != nil {
		t.Fatalf("agent publish on its allowPublish channel: %v", err)
	}
	if ack.Stream != n.ChatStream() {
		t.Fatalf("stored in %s, want %s", ack.Stream, n.ChatStream())
	}
	ajs, _ := jetstream.New(connect(t, m, admin))
	for _, stream := range []string{n.ChatStream(), n.DMStream()} {
		if _, err := ajs.Stream(ctx, stream); err != nil {
			t.Errorf("admin stream info %s: %v", stream, err)
		}
	}
	kv, err := js.KeyValue(ctx, n.ChannelsBucket())
	if err != nil {
		t.Fatalf("agent opens channel registry: %v", err)
	}
	e, err := kv.Get(ctx, wire.DefaultsKey)
	if err != nil {
		t.Fatalf("agent reads =defaults: %v", err)
	}
	var d wire.ChannelDefaults
	if err := json.Unmarshal(e.Value(), &d); err != nil || d.DeliveryClass != wire.DeliveryDurable {
		t.Fatalf("=defaults = %s (%v), want deliveryClass durable", e.Value(), err)
	}
}

package space_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

func TestZZScratch(t *testing.T) {
	m := space.NewTest(t)
	n := endpoint.NewNames("main")
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	admin := mint(t, m, "root", provisioner.ProfileAdmin, provisioner.Grants{})
	adnc := connect(t, m, admin)
	tap, _ := adnc.SubscribeSync("cotal.main.>")
	adnc.Flush()
	ctx := context.Background()
	anc := connect(t, m, alice)
	own, _ := anc.SubscribeSync(endpoint.InboxPrefix(alice.ID) + ".push")
	defer func() { m, err := own.NextMsg(time.Second); fmt.Println("own", err, m) }()
	ajs, _ := jetstream.New(anc)
	hist := n.HistoryConsumer(alice.ID)
	for i, ds := range []string{endpoint.InboxPrefix(alice.ID) + ".push", n.InstSubject(bob.ID, "UFAKE"), n.PresenceKVSubject(bob.ID)} {
		cfg := map[string]any{"stream_name": n.ChatStream(), "config": map[string]any{
			"name": hist, "filter_subject": n.ChatFilter("general"), "ack_policy": "none",
			"deliver_subject": ds, "deliver_policy": "new"}}
		body, _ := json.Marshal(cfg)
		r, err := anc.Request("$JS.API.CONSUMER.CREATE."+n.ChatStream()+"."+hist+"."+n.ChatFilter("general"), body, 2*time.Second)
		fmt.Println("push create:", err, string(r.Data)[:80])
		if _, err := ajs.Publish(ctx, n.ChatSubject(alice.ID, "general"), []byte(fmt.Sprintf(`{"forged":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		ci, err := anc.Request("$JS.API.CONSUMER.INFO."+n.ChatStream()+"."+hist, nil, time.Second)
		fmt.Println("cinfo", err, string(ci.Data)[400:])
		anc.Request("$JS.API.CONSUMER.DELETE."+n.ChatStream()+"."+hist, nil, time.Second)
	}
	adjs, _ := jetstream.New(adnc)
	s, err := adjs.Stream(ctx, n.DMStream())
	fmt.Printf("DM msgs %v %+v\n", err, s.CachedInfo().State.Msgs)
	for {
		msg, err := tap.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		fmt.Println("tap", msg.Subject, string(msg.Data))
	}
}

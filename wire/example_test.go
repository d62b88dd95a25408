package wire_test

import (
	"encoding/json"
	"fmt"

	"github.com/cotal-go/cotal/wire"
)

const exampleAlice = "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD"

func ExampleParseSubject() {
	sub, err := wire.ParseSubject("cotal.main.chat." + exampleAlice + ".team.backend")
	if err != nil {
		panic(err)
	}
	fmt.Println(sub.Kind, sub.Space, sub.Rest, sub.Sender == exampleAlice)

	_, err = wire.ParseSubject("cotal.main.chat." + exampleAlice)
	reason, _ := wire.ReasonOf(err)
	fmt.Println(reason)
	// Output:
	// chat main team.backend true
	// malformed-subject
}

func ExampleNames_ChatSubject() {
	n := wire.NewNames("My Space")
	fmt.Println(n.ChatSubject("dev.alice", "team backend.api"))
	fmt.Println(n.ChatFilter("team.>"))
	// Output:
	// cotal.My_Space.chat.dev_alice.team_backend.api
	// cotal.My_Space.chat.*.team.>
}

func ExampleParseLink() {
	l, err := wire.ParseLink("cotals://alice:s3cr3t@mesh.example.com/main?channel=team.backend&channels=ops.>")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.ServerURL())
	fmt.Println(l.Space, l.Channels, l.User)
	fmt.Println(l.Redacted())
	// Output:
	// tls://mesh.example.com:4222
	// main [team.backend ops.>] alice
	// cotals://alice:xxxxx@mesh.example.com/main?channel=team.backend,ops.>
}

func ExampleNormalizeMentions() {
	fmt.Printf("%q\n", wire.NormalizeMentions([]string{" Bob", "carol", "BOB", ""}))
	fmt.Println(wire.NormalizeMentions([]string{" "}) == nil)
	// Output:
	// ["bob" "carol"]
	// true
}

func ExampleEffectiveClass() {
	defaults := &wire.ChannelDefaults{DeliveryClass: wire.DeliveryLive}
	announcements := &wire.ChannelConfig{DeliveryClass: wire.DeliveryDurable}
	fmt.Println(wire.EffectiveClass(nil, nil))
	fmt.Println(wire.EffectiveClass(nil, defaults))
	fmt.Println(wire.EffectiveClass(announcements, defaults))
	// Output:
	// durable
	// live
	// durable
}

func ExampleCheckDelivery() {
	n := wire.NewNames("main")
	from := wire.EndpointRef{ID: exampleAlice, Name: "alice"}
	msg := wire.NewChannelMessage("main", from, "team.backend", wire.TextPart("hello"))
	payload, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}

	sub, got, err := wire.CheckDelivery(n.ChatSubject(exampleAlice, "team.backend"), payload)
	fmt.Println(sub.Kind, sub.Rest, got.Parts[0].Text, err)

	// The same payload on a subject whose sender token is someone else's is spoofed.
	_, _, err = wire.CheckDelivery(n.ChatSubject("UBOB", "team.backend"), payload)
	reason, _ := wire.ReasonOf(err)
	fmt.Println(reason)
	// Output:
	// chat team.backend hello <nil>
	// sender-mismatch
}

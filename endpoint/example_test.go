package endpoint_test

import (
	"encoding/json"
	"fmt"

	"github.com/cotal-go/cotal/endpoint"
)

const exampleAlice = "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD"

func ExampleParseSubject() {
	sub, err := endpoint.ParseSubject("cotal.main.chat." + exampleAlice + ".team.backend")
	if err != nil {
		panic(err)
	}
	fmt.Println(sub.Kind, sub.Space, sub.Rest, sub.Sender == exampleAlice)

	_, err = endpoint.ParseSubject("cotal.main.chat." + exampleAlice)
	reason, _ := endpoint.ReasonOf(err)
	fmt.Println(reason)
	// Output:
	// chat main team.backend true
	// malformed-subject
}

func ExampleNames_ChatSubject() {
	n := endpoint.NewNames("My Space")
	fmt.Println(n.ChatSubject("dev.alice", "team backend.api"))
	fmt.Println(n.ChatFilter("team.>"))
	// Output:
	// cotal.My_Space.chat.dev_alice.team_backend.api
	// cotal.My_Space.chat.*.team.>
}

func ExampleParseLink() {
	l, err := endpoint.ParseLink("cotals://alice:s3cr3t@mesh.example.com/main?channel=team.backend&channels=ops.>")
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
	fmt.Printf("%q\n", endpoint.NormalizeMentions([]string{" Bob", "carol", "BOB", ""}))
	fmt.Println(endpoint.NormalizeMentions([]string{" "}) == nil)
	// Output:
	// ["bob" "carol"]
	// true
}

func ExampleEffectiveClass() {
	defaults := &endpoint.ChannelDefaults{DeliveryClass: endpoint.DeliveryLive}
	announcements := &endpoint.ChannelConfig{DeliveryClass: endpoint.DeliveryDurable}
	fmt.Println(endpoint.EffectiveClass(nil, nil))
	fmt.Println(endpoint.EffectiveClass(nil, defaults))
	fmt.Println(endpoint.EffectiveClass(announcements, defaults))
	// Output:
	// durable
	// live
	// durable
}

func ExampleCheckDelivery() {
	n := endpoint.NewNames("main")
	from := endpoint.EndpointRef{ID: exampleAlice, Name: "alice"}
	msg := endpoint.NewChannelMessage("main", from, "team.backend", endpoint.TextPart("hello"))
	payload, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}

	sub, got, err := endpoint.CheckDelivery(n.ChatSubject(exampleAlice, "team.backend"), payload)
	fmt.Println(sub.Kind, sub.Rest, got.Parts[0].Text, err)

	// The same payload on a subject whose sender token is someone else's is spoofed.
	_, _, err = endpoint.CheckDelivery(n.ChatSubject("UBOB", "team.backend"), payload)
	reason, _ := endpoint.ReasonOf(err)
	fmt.Println(reason)
	// Output:
	// chat team.backend hello <nil>
	// sender-mismatch
}

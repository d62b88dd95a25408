package broker_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/nats-io/nats.go"
)

// A throwaway development mesh: no TCP listener, no credentials, memory only; a client
// connects through the process.
func ExampleStart() {
	cfg := broker.DefaultConfig()
	cfg.Memory = true
	cfg.Open = true
	cfg.Logger = slog.New(slog.DiscardHandler)

	ctx := context.Background()
	b, err := broker.Start(ctx, cfg)
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer b.Shutdown(ctx)

	nc, err := nats.Connect("", nats.InProcessServer(b.InProcess()))
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer nc.Close()
	sub, _ := nc.SubscribeSync("greeting")
	nc.Publish("greeting", []byte("hello"))
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		fmt.Println("receive:", err)
		return
	}
	fmt.Println(string(msg.Data), b.Healthy() == nil, b.ClientURL() == "")
	// Output:
	// hello true true
}

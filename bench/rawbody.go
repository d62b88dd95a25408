package bench

import (
	"encoding/json"
	"fmt"

	"github.com/cotal-go/cotal/wire"
)

// rawBody is what a raw side publishes and what its receivers do with each copy: bare bytes
// that are only counted, or cotal's envelope decoded with encoding/json, which is what
// hand-rolled NATS carrying the same messages would pay ("raw + encoding/json").
type rawBody struct {
	data   []byte
	decode bool
	// tag keeps each body's subjects and consumers apart within a run: "r" or "j".
	tag string
}

// bareBody carries text as bare bytes.
func bareBody(text string) rawBody { return rawBody{data: []byte(text), tag: "r"} }

// jsonBody carries m's encoding, which every receiver decodes with encoding/json. It fails
// when the envelope does not encode or does not decode back, so a run never measures a
// decoder that rejects what it is given.
func jsonBody(m *wire.CotalMessage) (rawBody, error) {
	data, err := m.AppendJSON(nil)
	if err != nil {
		return rawBody{}, fmt.Errorf("encode the raw side's envelope: %w", err)
	}
	if err := decodeStd(data); err != nil {
		return rawBody{}, err
	}
	return rawBody{data: data, decode: true, tag: "j"}, nil
}

// receive is the receiver's work on one copy.
func (b rawBody) receive(data []byte) {
	if b.decode {
		_ = decodeStd(data) // jsonBody proved the bytes decode; the cost is what is measured
	}
}

// stdEnvelope mirrors SPEC §5's envelope with plain struct tags, so encoding/json decodes it
// without wire's one-pass scanner.
type stdEnvelope struct {
	ID    string `json:"id"`
	TS    int64  `json:"ts"`
	Space string `json:"space"`
	From  struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Role string `json:"role"`
	} `json:"from"`
	Channel   string   `json:"channel"`
	To        string   `json:"to"`
	ToService string   `json:"toService"`
	Mentions  []string `json:"mentions"`
	Parts     []struct {
		Kind string          `json:"kind"`
		Text string          `json:"text"`
		Data json.RawMessage `json:"data"`
	} `json:"parts"`
	ReplyTo   string `json:"replyTo"`
	ContextID string `json:"contextId"`
}

func decodeStd(data []byte) error {
	var m stdEnvelope
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("decode the envelope with encoding/json: %w", err)
	}
	return nil
}

// rawSender is the sender reference of the envelopes the raw + encoding/json side carries:
// an id and name of the length cotal's bench endpoints have.
var rawSender = wire.EndpointRef{ID: wire.NewMessageID(), Name: "sender"}

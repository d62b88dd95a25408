package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/wire"
)

// benchSizes are the benchmark suite's two text payload sizes.
var benchSizes = []struct {
	name string
	size int
}{{"128B", 128}, {"1KiB", 1024}}

func benchMessage(size int) *wire.CotalMessage {
	from := wire.EndpointRef{ID: "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD", Name: "alice"}
	return wire.NewChannelMessage("main", from, "team.backend", wire.TextPart(strings.Repeat("x", size)))
}

// BenchmarkDecodeMessage measures the receive-side envelope decode every surfaced copy pays
// (SPEC §5), at the benchmark suite's two payload sizes.
func BenchmarkDecodeMessage(b *testing.B) {
	for _, bs := range benchSizes {
		data, err := json.Marshal(benchMessage(bs.size))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bs.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := wire.DecodeMessage(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshalMessage measures the send-side encode through json.Marshal, the path the
// endpoint takes.
func BenchmarkMarshalMessage(b *testing.B) {
	for _, bs := range benchSizes {
		m := benchMessage(bs.size)
		b.Run(bs.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendJSON measures the send-side encode into a reused buffer.
func BenchmarkAppendJSON(b *testing.B) {
	for _, bs := range benchSizes {
		m := benchMessage(bs.size)
		b.Run(bs.name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = m.AppendJSON(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

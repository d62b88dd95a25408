package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/wire"
)

// BenchmarkDecodeMessage measures the receive-side envelope decode every surfaced copy pays
// (SPEC §5), at the benchmark suite's two payload sizes.
func BenchmarkDecodeMessage(b *testing.B) {
	from := wire.EndpointRef{ID: "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD", Name: "alice"}
	for _, size := range []int{128, 1024} {
		m := wire.NewChannelMessage("main", from, "team.backend", wire.TextPart(strings.Repeat("x", size)))
		data, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[int]string{128: "128B", 1024: "1KiB"}[size], func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := wire.DecodeMessage(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

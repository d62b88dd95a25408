package endpoint

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDedupFinish measures what the dedup window costs one surfaced copy: a claim and
// its finish, without the copy's bytes (a DM or anycast) and with them (a channel copy,
// remembered for duplicateCopy), at the benchmark suite's two payload sizes; in a full window,
// and in windows that start empty every 2000 copies, as an Endpoint that lives for one
// `cotal bench` run does.
func BenchmarkDedupFinish(b *testing.B) {
	for _, size := range []int{128, 1024} {
		data := []byte(strings.Repeat("x", size))
		for _, c := range []struct{ kept, fresh bool }{{false, false}, {true, false}, {true, true}} {
			kept, fresh := c.kept, c.fresh
			name := strconv.Itoa(size) + "B/bytes-not-kept"
			if kept {
				name = strconv.Itoa(size) + "B/bytes-kept"
			}
			if fresh {
				name += "/fresh-every-2000"
			}
			b.Run(name, func(b *testing.B) {
				d := newDedup(DefaultDedupWindow)
				ids := make([]string, 1<<16)
				for i := range ids {
					ids[i] = strconv.Itoa(i)
				}
				i := 0
				for b.Loop() {
					k := dedupKey{"UALICE", ids[i&(len(ids)-1)]}
					i++
					if fresh && i%2000 == 0 {
						d = newDedup(DefaultDedupWindow)
					}
					d.claim(k)
					var c *handledCopy
					if kept {
						c = &handledCopy{data: data, subject: "cotal.main.chat.UALICE.team", channel: "team"}
					}
					d.finish(k, true, c)
				}
			})
		}
	}
}

// BenchmarkDedupSameCopy measures the undecoded duplicate check of a copy whose bytes match
// a handled channel copy (duplicateCopy's cost in place of a full decode and validation).
func BenchmarkDedupSameCopy(b *testing.B) {
	for _, size := range []int{128, 1024} {
		data := []byte(strings.Repeat("x", size))
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			d := newDedup(DefaultDedupWindow)
			k := dedupKey{"UALICE", "m1"}
			d.claim(k)
			d.finish(k, true, &handledCopy{data: data, subject: "cotal.main.chat.UALICE.team", channel: "team"})
			for b.Loop() {
				if _, _, ok := d.sameCopy("m1", data); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}

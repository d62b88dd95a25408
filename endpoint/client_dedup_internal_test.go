package endpoint

import (
	"fmt"
	"testing"
)

func TestReceiveDedupClaimsEachMessageOnce(t *testing.T) {
	alice, bob := dedupKey{"UALICE", "m1"}, dedupKey{"UBOB", "m1"}
	tests := []struct {
		name  string
		steps func(d *dedup) claim
		want  claim
	}{
		{"a new id is fresh", func(d *dedup) claim { return d.claim(alice) }, claimFresh},
		{"a second copy while the first is handled is in flight", func(d *dedup) claim {
			d.claim(alice)
			return d.claim(alice)
		}, claimInFlight},
		{"a copy after the first was handled is done", func(d *dedup) claim {
			handle(d, alice, nil)
			return d.claim(alice)
		}, claimDone},
		{"a copy after the first failed is fresh again", func(d *dedup) claim {
			d.claim(alice)
			d.finish(alice, false, nil)
			return d.claim(alice)
		}, claimFresh},
		{"the same id from another sender is a different message", func(d *dedup) claim {
			handle(d, alice, nil)
			return d.claim(bob)
		}, claimFresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.steps(newDedup(10)); got != tt.want {
				t.Fatalf("claim = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReceiveDedupForgetsTheOldestHandledIDsBeyondItsBound(t *testing.T) {
	d := newDedup(100)
	inFlight := dedupKey{"UALICE", "pending"}
	d.claim(inFlight)
	for i := range 1000 {
		k := dedupKey{"UALICE", fmt.Sprint(i)}
		handle(d, k, nil)
	}
	if n := remembered(d); n > 200 {
		t.Fatalf("%d ids remembered, want at most twice the window's 100", n)
	}
	if got := d.claim(inFlight); got != claimInFlight {
		t.Fatalf("an in-flight claim was evicted (claim = %d)", got)
	}
	if got := d.claim(dedupKey{"UALICE", "999"}); got != claimDone {
		t.Fatalf("the newest handled id was forgotten (claim = %d)", got)
	}
	if got := d.claim(dedupKey{"UALICE", "0"}); got != claimFresh {
		t.Fatalf("the oldest handled id is still remembered (claim = %d)", got)
	}
}

func TestReceiveDedupMatchesOnlyTheBytesOfAHandledChannelCopy(t *testing.T) {
	alice, bob := dedupKey{"UALICE", "m1"}, dedupKey{"UBOB", "m1"}
	data := []byte(`{"id":"m1","from":{"id":"UALICE"}}`)
	copyOf := func(b []byte) *handledCopy {
		return &handledCopy{data: b, subject: "cotal.main.chat.UALICE.team", channel: "team"}
	}
	tests := []struct {
		name  string
		steps func(d *dedup)
		id    string
		data  []byte
		want  bool
	}{
		{"the same bytes under the handled id match", func(d *dedup) {
			handle(d, alice, copyOf(data))
		}, "m1", data, true},
		{"other bytes of the same length under the handled id do not", func(d *dedup) {
			handle(d, alice, copyOf(data))
		}, "m1", []byte(`{"id":"m1","from":{"id":"UMALLO"}}`), false},
		{"the same bytes under another id do not", func(d *dedup) {
			handle(d, alice, copyOf(data))
		}, "m2", data, false},
		{"a copy still in the Handler does not", func(d *dedup) { d.claim(alice) }, "m1", data, false},
		{"a copy whose Handler failed does not", func(d *dedup) {
			d.claim(alice)
			d.finish(alice, false, copyOf(data))
		}, "m1", data, false},
		{"a handled message whose bytes were not kept does not", func(d *dedup) {
			handle(d, alice, nil)
		}, "m1", data, false},
		{"an empty id never matches", func(d *dedup) {
			d.claim(dedupKey{"UALICE", ""})
			d.finish(dedupKey{"UALICE", ""}, true, copyOf(data))
		}, "", data, false},
		{"the id reused by a second sender finds the later copy's bytes", func(d *dedup) {
			handle(d, alice, copyOf(data))
			handle(d, bob, copyOf([]byte("bob's bytes")))
		}, "m1", []byte("bob's bytes"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDedup(10)
			tt.steps(d)
			if _, _, got := d.sameCopy(tt.id, tt.data); got != tt.want {
				t.Fatalf("sameCopy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReceiveDedupForgetsTheBytesOfAnEvictedCopy(t *testing.T) {
	d := newDedup(10)
	first := dedupKey{"UALICE", "first"}
	handle(d, first, &handledCopy{data: []byte("first")})
	for i := range 20 {
		k := dedupKey{"UALICE", fmt.Sprint(i)}
		handle(d, k, &handledCopy{data: []byte(k.id)})
	}
	if _, _, ok := d.sameCopy("first", []byte("first")); ok {
		t.Fatal("an evicted copy still matches")
	}
	if n := len(d.cur.byID) + len(d.prev.byID); n > 20 {
		t.Fatalf("%d ids indexed, want at most twice the window's 10", n)
	}
	if _, _, ok := d.sameCopy("19", []byte("19")); !ok {
		t.Fatal("the newest copy does not match")
	}
}

// TestReceiveDedupKeepsTheIDsItUsesRecently: an id met again is remembered as if new, so the
// window's bound forgets the ids least recently met, never one a copy just matched.
func TestReceiveDedupKeepsTheIDsItUsesRecently(t *testing.T) {
	d := newDedup(10)
	kept := dedupKey{"UALICE", "kept"}
	handle(d, kept, &handledCopy{data: []byte("kept")})
	for i := range 100 {
		k := dedupKey{"UALICE", fmt.Sprint(i)}
		handle(d, k, nil)
		if i%5 == 0 {
			if got := d.claim(kept); got != claimDone {
				t.Fatalf("after %d other ids, the id met every 5 is forgotten (claim = %d)", i+1, got)
			}
		}
	}
	if _, _, ok := d.sameCopy("kept", []byte("kept")); !ok {
		t.Fatal("the bytes of the id met every 5 are forgotten")
	}
	if n := remembered(d); n > 20 {
		t.Fatalf("%d ids remembered, want at most twice the window's 10", n)
	}
}

// TestReceiveDedupCarriesClaimsInFlightAcrossGenerations: a claim in flight survives any
// number of other ids, and once finished it is done, not in flight, however long it waited.
func TestReceiveDedupCarriesClaimsInFlightAcrossGenerations(t *testing.T) {
	d := newDedup(4)
	slow := dedupKey{"UALICE", "slow"}
	d.claim(slow)
	for i := range 50 {
		k := dedupKey{"UALICE", fmt.Sprint(i)}
		handle(d, k, nil)
		if got := d.claim(slow); got != claimInFlight {
			t.Fatalf("after %d other ids the claim in flight reads %d", i+1, got)
		}
	}
	d.finish(slow, true, nil)
	for i := range 3 {
		k := dedupKey{"UBOB", fmt.Sprint(i)}
		handle(d, k, nil)
	}
	if got := d.claim(slow); got != claimDone {
		t.Fatalf("the finished claim reads %d, want done", got)
	}
}

// remembered is how many ids d holds now.
func remembered(d *dedup) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cur.index) + len(d.prev.index)
}

// handle claims k and finishes it handled, with c as the handled copy.
func handle(d *dedup, k dedupKey, c *handledCopy) {
	d.claim(k)
	d.finish(k, true, c)
}

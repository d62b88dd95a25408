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
			d.claim(alice)
			d.finish(alice, true)
			return d.claim(alice)
		}, claimDone},
		{"a copy after the first failed is fresh again", func(d *dedup) claim {
			d.claim(alice)
			d.finish(alice, false)
			return d.claim(alice)
		}, claimFresh},
		{"the same id from another sender is a different message", func(d *dedup) claim {
			d.claim(alice)
			d.finish(alice, true)
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
		d.claim(k)
		d.finish(k, true)
	}
	if n := len(d.entries); n > 100 {
		t.Fatalf("%d ids remembered, want at most 100", n)
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

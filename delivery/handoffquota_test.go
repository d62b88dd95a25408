package delivery

import (
	"errors"
	"testing"
)

// testQuota is a handoffQuota as load leaves it, with the given bound.
func testQuota(bound int64) *handoffQuota {
	return &handoffQuota{bound: bound, est: map[string]int64{}, inflight: map[string]int64{},
		undelivered: map[string][]uint64{}}
}

// TestDLVRoomCountsHandoffsTheConsumerHasNotSeen: the consumer's num_pending rises only when the
// stream signals it, after the PubAck, so the count must not fall below the copies handed over
// past the consumer's last delivered sequence.
func TestDLVRoomCountsHandoffsTheConsumerHasNotSeen(t *testing.T) {
	tests := []struct {
		name   string
		handed []uint64
		state  handoffState
		want   int64
		kept   int
	}{
		{"consumer behind the handoffs", []uint64{4, 5, 6}, handoffState{}, 3, 3},
		{"consumer caught up", []uint64{4, 5, 6}, handoffState{pending: 3}, 3, 3},
		{"some delivered, unacked", []uint64{4, 5, 6}, handoffState{pending: 1, ackPending: 2, delivered: 5}, 3, 1},
		{"all delivered and acked", []uint64{4, 5, 6}, handoffState{delivered: 6}, 0, 0},
		{"older copies pending too", []uint64{9}, handoffState{pending: 4, ackPending: 1, delivered: 3}, 5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testQuota(3)
			for _, seq := range tt.handed {
				r.settled("m", seq)
			}
			if got := r.unacked("m", tt.state); got != tt.want {
				t.Fatalf("unacked = %d, want %d", got, tt.want)
			}
			if got := len(r.undelivered["m"]); got != tt.kept {
				t.Fatalf("kept %d undelivered sequences, want %d", got, tt.kept)
			}
		})
	}
}

// TestDLVRoomRefusesWhenTheConsumerLags: three copies handed over and a consumer that has not
// yet counted them leave no room under a bound of 3.
func TestDLVRoomRefusesWhenTheConsumerLags(t *testing.T) {
	r := testQuota(3)
	for seq := uint64(1); seq <= 3; seq++ {
		ok, err := r.admit("m", func() (handoffState, error) { return handoffState{}, nil })
		if !ok || err != nil {
			t.Fatalf("copy %d refused under the bound: %v", seq, err)
		}
		r.settled("m", seq)
	}
	ok, err := r.admit("m", func() (handoffState, error) { return handoffState{}, nil })
	if ok || err != nil {
		t.Fatalf("a fourth copy was admitted (%v) while three are undelivered", err)
	}
}

// TestDLVRoomCountsCopiesInFlight: the fan-out and the reader may both have copies for one
// member whose publishes have not settled; a count taken from the consumer must include them,
// and a copy whose publish failed stops counting once it settles.
func TestDLVRoomCountsCopiesInFlight(t *testing.T) {
	r := testQuota(3)
	asked := 0
	state := func() (handoffState, error) { asked++; return handoffState{}, nil }
	for i := range 3 {
		if ok, _ := r.admit("m", state); !ok {
			t.Fatalf("copy %d refused under the bound", i+1)
		}
	}
	if asked != 1 {
		t.Fatalf("the consumer was asked %d times, want once: a member with no estimate is asked first", asked)
	}
	if ok, _ := r.admit("m", state); ok {
		t.Fatal("a fourth copy was admitted while three are in flight and the consumer has seen none")
	}
	r.settled("m", 0) // a publish that failed
	r.settled("m", 7) // one stored, not yet delivered; the third is still in flight
	if ok, _ := r.admit("m", state); !ok {
		t.Fatal("refused with two copies unacknowledged under a bound of 3")
	}
	if asked != 3 {
		t.Fatalf("the consumer was asked %d times, want 3", asked)
	}
}

// TestDLVRoomAsksAgainAfterAFailedCount: a copy admitted because the consumer could not be
// read leaves no estimate behind, so the next copy asks again.
func TestDLVRoomAsksAgainAfterAFailedCount(t *testing.T) {
	r := testQuota(3)
	fail := func() (handoffState, error) { return handoffState{}, errors.New("no consumer") }
	if ok, err := r.admit("m", fail); !ok || err == nil {
		t.Fatalf("admit = %v, %v; want admitted with the error", ok, err)
	}
	full := func() (handoffState, error) { return handoffState{pending: 3}, nil }
	if ok, _ := r.admit("m", full); ok {
		t.Fatal("admitted past a full handoff: the failed count left an estimate behind")
	}
}

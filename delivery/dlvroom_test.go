package delivery

import "testing"

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
			r := dlvRoom{bound: 3, est: map[string]int64{}, undelivered: map[string][]uint64{}}
			for _, seq := range tt.handed {
				r.handed("m", seq)
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
	r := dlvRoom{bound: 3, est: map[string]int64{}, undelivered: map[string][]uint64{}}
	for seq := uint64(1); seq <= 3; seq++ {
		ok, err := r.admit("m", func() (handoffState, error) { return handoffState{}, nil })
		if !ok || err != nil {
			t.Fatalf("copy %d refused under the bound: %v", seq, err)
		}
		r.handed("m", seq)
	}
	ok, err := r.admit("m", func() (handoffState, error) { return handoffState{}, nil })
	if ok || err != nil {
		t.Fatalf("a fourth copy was admitted (%v) while three are undelivered", err)
	}
}

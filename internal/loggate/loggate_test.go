package loggate

import (
	"testing"
	"time"
)

func TestGateAdmitsOneLinePerInterval(t *testing.T) {
	start := time.Unix(1000, 0)
	tests := []struct {
		name  string
		gate  *Gate
		calls []time.Duration // offsets from start
		want  []bool
	}{
		{"first, then none within the interval", New(time.Second), []time.Duration{0, 10 * time.Millisecond, 999 * time.Millisecond}, []bool{true, false, false}},
		{"one again once it passed", New(time.Second), []time.Duration{0, time.Second, 1500 * time.Millisecond, 2 * time.Second}, []bool{true, true, false, true}},
		{"the zero gate paces at Interval", &Gate{}, []time.Duration{0, Interval - time.Millisecond, Interval}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, d := range tt.calls {
				if got := tt.gate.Admit(start.Add(d)); got != tt.want[i] {
					t.Errorf("call %d at +%v: %v, want %v", i, d, got, tt.want[i])
				}
			}
		})
	}
}

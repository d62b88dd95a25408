package wire

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestReasonOf(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		reason string
		ok     bool
	}{
		{"an anomaly carries its reason", &Anomaly{Reason: ReasonSenderMismatch, Err: io.EOF}, ReasonSenderMismatch, true},
		{"a wrapped anomaly still does", fmt.Errorf("receive: %w", &Anomaly{Reason: ReasonMalformedJSON}),
			ReasonMalformedJSON, true},
		{"a wrapped bare sentinel maps to its token", fmt.Errorf("x: %w", ErrMalformedSubject), ReasonMalformedSubject, true},
		{"a transient error has no reason", io.ErrUnexpectedEOF, "", false},
		{"nil has no reason", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, ok := ReasonOf(tt.err)
			if reason != tt.reason || ok != tt.ok {
				t.Fatalf("ReasonOf = %q, %v; want %q, %v", reason, ok, tt.reason, tt.ok)
			}
		})
	}
}

func TestAnomalyMatchesExactlyTheSentinelOfItsReason(t *testing.T) {
	sentinels := map[string]error{
		ReasonMalformedSubject: ErrMalformedSubject,
		ReasonSenderMismatch:   ErrSenderMismatch,
		ReasonMalformedJSON:    ErrMalformedJSON,
	}
	for reason := range sentinels {
		t.Run(reason, func(t *testing.T) {
			a := &Anomaly{Reason: reason, Err: io.EOF}
			for other, sentinel := range sentinels {
				if got := errors.Is(a, sentinel); got != (other == reason) {
					t.Errorf("errors.Is(%s anomaly, %v) = %v", reason, sentinel, got)
				}
			}
			if !errors.Is(a, io.EOF) {
				t.Error("the anomaly does not unwrap to its detail")
			}
			if want := reason + ": EOF"; a.Error() != want {
				t.Errorf("Error = %q, want %q", a.Error(), want)
			}
		})
	}
	if errors.Is(&Anomaly{Reason: "rate-limited"}, ErrMalformedJSON) {
		t.Error("an anomaly with an unknown reason matches a sentinel")
	}
}

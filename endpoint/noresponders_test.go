package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestRetryNoRespondersSendsAgainOnlyWhatReachedNobody(t *testing.T) {
	other := errors.New("refused")
	tests := []struct {
		name      string
		errs      []error // what each call returns; the last repeats
		wantCalls int
		wantErr   error
	}{
		{"success at once", []error{nil}, 1, nil},
		{"no responders, then success", []error{nats.ErrNoResponders, nil}, 2, nil},
		{"wrapped no responders, then success", []error{fmt.Errorf("control: %w", ErrNoResponders), nil}, 2, nil},
		{"another error is not retried", []error{other}, 1, other},
		{"no responders every time gives up", []error{nats.ErrNoResponders}, noResponderTries, nats.ErrNoResponders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := retryNoResponders(context.Background(), func() error {
				err := tt.errs[min(calls, len(tt.errs)-1)]
				calls++
				return err
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Fatalf("calls %d err %v, want %d calls and %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

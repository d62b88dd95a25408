package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
		{"no responders every time gives up", []error{nats.ErrNoResponders}, noResponders.Tries, nats.ErrNoResponders},
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

// TestRetryReadSendsALostReadAgain: an attempt that gets no answer is cut off at its own
// bound and sent again, within the caller's deadline; the caller's own deadline and other
// errors end it.
func TestRetryReadSendsALostReadAgain(t *testing.T) {
	other := errors.New("refused")
	lost := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name      string
		calls     []func(context.Context) error // what each call does; the last repeats
		deadline  time.Duration
		wantCalls int // 0: any number
		wantErr   error
	}{
		{"lost, then answered", []func(context.Context) error{lost, func(context.Context) error { return nil }}, time.Minute, 2, nil},
		{"no responders, lost, then answered", []func(context.Context) error{
			func(context.Context) error { return nats.ErrNoResponders }, lost, func(context.Context) error { return nil }}, time.Minute, 3, nil},
		{"another error is not retried", []func(context.Context) error{func(context.Context) error { return other }}, time.Minute, 1, other},
		{"the caller's deadline ends it", []func(context.Context) error{lost}, 250 * time.Millisecond, 0, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
			defer cancel()
			calls := 0
			err := retryRead(ctx, 50*time.Millisecond, func(ctx context.Context) error {
				err := tt.calls[min(calls, len(tt.calls)-1)](ctx)
				calls++
				return err
			})
			if tt.wantCalls > 0 && calls != tt.wantCalls || !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Fatalf("calls %d err %v, want %d calls and %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

package reask

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestDoAsksAgainOnlyALostAnswer: an attempt that gets no answer is cut off at its own bound
// and sent again; an answer, another error or the caller's own deadline ends it.
func TestDoAsksAgainOnlyALostAnswer(t *testing.T) {
	other := errors.New("refused")
	lost := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	answered := func(context.Context) error { return nil }
	refused := func(context.Context) error { return other }
	tests := []struct {
		name      string
		calls     []func(context.Context) error // what each call does; the last repeats
		deadline  time.Duration
		wantCalls int // 0: any number above one
		wantErr   error
	}{
		{"answered at once", []func(context.Context) error{answered}, time.Minute, 1, nil},
		{"lost twice, then answered", []func(context.Context) error{lost, lost, answered}, time.Minute, 3, nil},
		{"another error is not asked again", []func(context.Context) error{refused}, time.Minute, 1, other},
		{"lost, then another error", []func(context.Context) error{lost, refused}, time.Minute, 2, other},
		{"the caller's deadline ends it", []func(context.Context) error{lost}, 250 * time.Millisecond, 0, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
			defer cancel()
			calls := 0
			err := Do(ctx, 50*time.Millisecond, func(ctx context.Context) error {
				err := tt.calls[min(calls, len(tt.calls)-1)](ctx)
				calls++
				return err
			})
			if tt.wantCalls > 0 && calls != tt.wantCalls || tt.wantCalls == 0 && calls < 2 {
				t.Errorf("calls %d, want %d", calls, tt.wantCalls)
			}
			if !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Errorf("err %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// ExampleDo looks something up with every attempt bounded at a second, within a minute.
func ExampleDo() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var answer string
	err := Do(ctx, time.Second, func(ctx context.Context) error {
		answer = "stream info"
		return nil
	})
	fmt.Println(answer, err)
	// Output: stream info <nil>
}

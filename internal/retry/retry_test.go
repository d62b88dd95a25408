package retry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestUnansweredAsksAgainOnlyALostAnswer: an attempt that gets no answer is cut off at its own bound
// and sent again; an answer, another error or the caller's own deadline ends it.
func TestUnansweredAsksAgainOnlyALostAnswer(t *testing.T) {
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
			err := Unanswered(ctx, 50*time.Millisecond, func(ctx context.Context) error {
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
			if tt.wantCalls == 0 && !strings.Contains(err.Error(), "attempts, each unanswered after 50ms") {
				t.Errorf("err %q does not say how many attempts it made", err)
			}
		})
	}
}

// ExampleUnanswered looks something up with every attempt bounded at a second, within a minute.
func ExampleUnanswered() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var answer string
	err := Unanswered(ctx, time.Second, func(ctx context.Context) error {
		answer = "stream info"
		return nil
	})
	fmt.Println(answer, err)
	// Output: stream info <nil>
}

func TestPolicyTriesAgainOnlyWhileTransient(t *testing.T) {
	transient := errors.New("transient")
	other := errors.New("refused")
	p := Policy{Tries: 4, First: time.Millisecond}
	tests := []struct {
		name      string
		errs      []error // what each call returns; the last repeats
		wantCalls int
		wantErr   error
	}{
		{"success at once", []error{nil}, 1, nil},
		{"transient twice, then success", []error{transient, transient, nil}, 3, nil},
		{"another error ends it", []error{transient, other}, 2, other},
		{"transient every time spends the tries", []error{transient}, 4, transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := p.Do(context.Background(), func(err error) bool { return errors.Is(err, transient) }, func() error {
				err := tt.errs[min(calls, len(tt.errs)-1)]
				calls++
				return err
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Errorf("calls %d, err %v; want %d, %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

func TestBackoffDoublesUpToItsCapAndStopsWithItsContext(t *testing.T) {
	b := NewBackoff(time.Millisecond, 4*time.Millisecond)
	var waits []time.Duration
	for range 4 {
		waits = append(waits, b.next)
		if !b.Wait(context.Background()) {
			t.Fatal("Wait reported a live context as ended")
		}
	}
	if fmt.Sprint(waits) != "[1ms 2ms 4ms 4ms]" {
		t.Errorf("waits %v, want [1ms 2ms 4ms 4ms]", waits)
	}
	b.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.next != time.Millisecond || b.Wait(ctx) {
		t.Errorf("after Reset the next wait is %v and an ended context still waits", b.next)
	}
}

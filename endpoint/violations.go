package endpoint

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// Refusals the broker reports asynchronously, as permission violations (SPEC §9).
var (
	// ErrPublishRefused: the credential may not publish on the subject (allowPublish, SPEC §9).
	ErrPublishRefused = errors.New("broker refused the publish")
	// ErrReplyRefused: the broker refused the subscription to a control reply subject; the
	// credential may not receive replies from this service (the agent grants name the delivery
	// service's reply subtree only; docs/accounts.md "Profiles and grants").
	ErrReplyRefused = errors.New("broker refused the control reply subscription")
)

// violationOp is the operation a permission violation names.
type violationOp string

const (
	opPublish   violationOp = "publish"
	opSubscribe violationOp = "subscription"
)

// violationRe matches the broker's "Permissions Violation for <Publish|Subscription> to
// "<subject>"" error.
var violationRe = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "(\S+)"`)

// parseViolation returns the operation and subject of a permission violation.
func parseViolation(err error) (violationOp, string, bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return "", "", false
	}
	m := violationRe.FindStringSubmatch(err.Error())
	if m == nil {
		return "", "", false
	}
	return violationOp(strings.ToLower(m[1])), m[2], true
}

// violations lets a call waiting on the network end at once when the broker refuses the
// publish or subscription it depends on, instead of running into its timeout.
type violations struct {
	mu      sync.Mutex
	next    int
	waiters map[string]map[int]func(error) // op + " " + subject
}

// watch cancels ctx with cause when the broker refuses op on subject, until stop is called.
func (v *violations) watch(ctx context.Context, op violationOp, subject string, cause error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	key := string(op) + " " + subject
	v.mu.Lock()
	if v.waiters == nil {
		v.waiters = make(map[string]map[int]func(error))
	}
	if v.waiters[key] == nil {
		v.waiters[key] = make(map[int]func(error))
	}
	id := v.next
	v.next++
	v.waiters[key][id] = func(err error) { cancel(refused(cause, err)) }
	v.mu.Unlock()
	return ctx, func() {
		v.mu.Lock()
		delete(v.waiters[key], id)
		if len(v.waiters[key]) == 0 {
			delete(v.waiters, key)
		}
		v.mu.Unlock()
		cancel(nil)
	}
}

// refused is the error of a call or send the broker refused: cause (ErrPublishRefused,
// ErrReplyRefused, ...) with the broker's own words.
func refused(cause, err error) error { return fmt.Errorf("%w: %v", cause, err) }

// refuse ends every wait on op and subject and reports whether there was one.
func (v *violations) refuse(op violationOp, subject string, err error) bool {
	v.mu.Lock()
	ws := v.waiters[string(op)+" "+subject]
	fns := make([]func(error), 0, len(ws))
	for _, end := range ws {
		fns = append(fns, end)
	}
	v.mu.Unlock()
	// Outside the lock: a waiter may stop its watch as it ends.
	for _, end := range fns {
		end(err)
	}
	return len(fns) > 0
}

// refusal returns the refusal that ended a watched ctx, or err unchanged.
func refusal(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrPublishRefused) || errors.Is(cause, ErrReplyRefused) ||
		errors.Is(cause, ErrReadRefused) {
		return cause
	}
	return err
}

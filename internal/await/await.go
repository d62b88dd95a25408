// Package await lets a test wait for a condition with a deadline instead of sleeping a fixed
// time and hoping the world caught up: a fixed sleep is either too short on a loaded machine or
// wastes time on an idle one. Check is nats-server's checkFor; True and Until are its boolean
// forms, polling every Interval. One loop serves every test package, so a deadline means the
// same thing everywhere.
package await

import (
	"errors"
	"testing"
	"time"
)

// Interval is how often True and Until test their condition.
const Interval = 20 * time.Millisecond

// Check calls fn every sleep until it returns nil. If total passes first, it fails t with fn's
// last error.
func Check(t testing.TB, total, sleep time.Duration, fn func() error) {
	t.Helper()
	if err := poll(total, sleep, fn); err != nil {
		t.Fatalf("condition not met within %v: %v", total, err)
	}
}

// True fails t unless cond holds within total, naming what it waited for.
func True(t testing.TB, total time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(total, cond) {
		t.Fatalf("timed out after %v waiting for %s", total, what)
	}
}

// Until reports whether cond holds within total, for a caller that handles the timeout itself.
func Until(total time.Duration, cond func() bool) bool {
	return poll(total, Interval, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}

// errNotYet is a boolean condition's "keep waiting".
var errNotYet = errors.New("not yet")

// poll calls fn every sleep until it returns nil, or returns fn's last error once total has
// passed. fn always runs at least once.
func poll(total, sleep time.Duration, fn func() error) error {
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(sleep)
	}
}

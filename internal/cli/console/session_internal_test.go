package console

import (
	"errors"
	"testing"
	"time"
)

// clock is a settable now for the sessions.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func testSessions() (*sessions, *clock) {
	c := &clock{t: time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)}
	ss := newSessions()
	ss.now = c.now
	return ss, c
}

func TestASessionEnds(t *testing.T) {
	const host = "127.0.0.1:8222"
	t.Run("after sessionIdle unused", func(t *testing.T) {
		ss, c := testSessions()
		s := ss.open(host)
		c.t = c.t.Add(sessionIdle - time.Second)
		if _, err := ss.admit(s.id, host, s.cookie); err != nil {
			t.Fatalf("used just before idling out: %v", err)
		}
		c.t = c.t.Add(sessionIdle)
		if _, err := ss.admit(s.id, host, s.cookie); !errors.Is(err, ErrNoSession) {
			t.Fatalf("after %s unused: %v, want ErrNoSession", sessionIdle, err)
		}
	})
	t.Run("after sessionLife however much it is used", func(t *testing.T) {
		ss, c := testSessions()
		s := ss.open(host)
		for c.t.Before(s.ends().Add(-sessionIdle / 2)) {
			if _, err := ss.admit(s.id, host, s.cookie); err != nil {
				t.Fatalf("at %s: %v", c.t.Sub(s.start), err)
			}
			c.t = c.t.Add(sessionIdle / 2)
		}
		c.t = s.ends()
		if _, err := ss.admit(s.id, host, s.cookie); !errors.Is(err, ErrNoSession) {
			t.Fatalf("at %s: %v, want ErrNoSession", sessionLife, err)
		}
	})
	t.Run("when maxSessions newer ones open, the least recently used", func(t *testing.T) {
		ss, c := testSessions()
		first := ss.open(host)
		for range maxSessions {
			c.t = c.t.Add(time.Second)
			ss.open(host)
		}
		if _, err := ss.admit(first.id, host, first.cookie); !errors.Is(err, ErrNoSession) {
			t.Fatalf("the oldest of %d sessions: %v, want ErrNoSession", maxSessions+1, err)
		}
	})
}

func TestASessionIsRefusedWithoutEachOfItsBindings(t *testing.T) {
	ss, _ := testSessions()
	s := ss.open("127.0.0.1:8222")
	for _, tc := range []struct {
		name, id, host, cookie string
		want                   error
	}{
		{"an unknown id", "NOPE", s.host, s.cookie, ErrNoSession},
		{"another port", s.id, "127.0.0.1:19999", s.cookie, ErrSessionElsewhere},
		{"another name of the host", s.id, "localhost:8222", s.cookie, ErrSessionElsewhere},
		{"no cookie", s.id, s.host, "", ErrSessionCookie},
		{"the id as the cookie", s.id, s.host, s.id, ErrSessionCookie},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ss.admit(tc.id, tc.host, tc.cookie); !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ss.admit(s.id, s.host, s.cookie); err != nil {
		t.Fatalf("with every binding: %v", err)
	}
}

package wire

import (
	"fmt"
	"strings"
)

// Kind is the kind token of a wire subject, token 2 of cotal.<space>.<kind>... (SPEC §3).
type Kind string

// The subject kinds ParseSubject accepts (SPEC §3). chat, inst and svc carry delivery messages;
// ctl carries control requests.
const (
	KindChat Kind = "chat"
	KindInst Kind = "inst"
	KindSvc  Kind = "svc"
	KindCtl  Kind = "ctl"
)

// Subject is a parsed wire subject. Every field holds the sanitized token(s) exactly as they
// appear on the wire; they are routing keys, never display names (SPEC §3).
type Subject struct {
	// Space is token 1.
	Space string
	// Kind is token 2.
	Kind Kind
	// Sender is the publishing instance id: token 3 for chat, token 4 otherwise.
	Sender string
	// Rest is the channel for chat (tokens 4+, joined by ".") and the route target (token 3:
	// instance id, role or service) for inst, svc and ctl.
	Rest string
}

// ParseSubject parses a delivery or control subject (SPEC §3): cotal.<space>.chat.<sender>.
// <channel...> with at least one channel token, or cotal.<space>.<inst|svc|ctl>.<target>.<sender>
// with exactly five tokens. Every token must be a non-empty sanitized token ([A-Za-z0-9_-]),
// which excludes wildcards, and a chat subject's channel holds at most MaxChannelLen bytes. Any other subject has no sender and is not a delivery: the error is
// an *Anomaly with reason malformed-subject.
func ParseSubject(s string) (Subject, error) {
	n := strings.Count(s, ".") + 1
	if n < 5 || !strings.HasPrefix(s, "cotal.") {
		return Subject{}, anomalyf(ReasonMalformedSubject,
			"subject %q is not cotal.<space>.<kind>.<two or more tokens>", s)
	}
	for i, rest := 0, s; i < n; i++ {
		t, after, _ := strings.Cut(rest, ".")
		if !IsToken(t) {
			return Subject{}, anomalyf(ReasonMalformedSubject,
				"subject %q: token %d %q is empty, a wildcard or not sanitized", s, i, t)
		}
		rest = after
	}
	space, after, _ := strings.Cut(s[len("cotal."):], ".")
	kind, after, _ := strings.Cut(after, ".")
	fourth, tail, _ := strings.Cut(after, ".") // tail is every token after the fourth
	sub := Subject{Space: space, Kind: Kind(kind)}
	switch sub.Kind {
	case KindChat:
		sub.Sender, sub.Rest = fourth, tail
		if len(sub.Rest) > MaxChannelLen {
			// No copy of such a channel could pass: its payload's channel must match and
			// ValidatePublishChannel refuses it. Saying so here names the real fault.
			return Subject{}, anomalyf(ReasonMalformedSubject,
				"chat subject %q: its channel has %d bytes, the limit is %d", s, len(sub.Rest), MaxChannelLen)
		}
	case KindInst, KindSvc, KindCtl:
		if n != 5 {
			return Subject{}, anomalyf(ReasonMalformedSubject,
				"%s subject %q has %d tokens, want exactly 5", sub.Kind, s, n)
		}
		sub.Rest, sub.Sender = fourth, tail
	default:
		return Subject{}, anomalyf(ReasonMalformedSubject,
			"subject %q has kind %q, want chat, inst, svc or ctl", s, kind)
	}
	return sub, nil
}

// IsToken reports whether t is a non-empty sanitized routing token (SPEC §3): one that Sanitize
// leaves unchanged.
func IsToken(t string) bool { return t != "" && tokenBytes(t) }

// reservedPrefixes are the namespaces application messages must stay out of (SPEC §3).
var reservedPrefixes = []string{"$JS.", "$KV.", "$SYS.", "$OBJ.", "_INBOX."}

// CheckApplicationSubject refuses a subject that begins with $JS., $KV., $SYS., $OBJ. or
// _INBOX. (SPEC §3): an application message there would be read as broker or JetStream traffic.
func CheckApplicationSubject(subject string) error {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(subject, p) {
			return fmt.Errorf("%w %q: %q; publish application messages under cotal.<space>",
				ErrReservedSubject, p, subject)
		}
	}
	return nil
}

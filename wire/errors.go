package wire

import (
	"errors"
	"fmt"
)

// Permanent wire anomalies (SPEC §4, §5). A delivery that fails with one of these is terminated,
// never redelivered: no retry can repair it. Errors returned by ParseSubject, DecodeMessage,
// CheckDelivery and CheckControlRequest are *Anomaly values matching exactly one of them.
var (
	// ErrMalformedSubject: the delivery subject does not have one of the shapes of SPEC §3.
	ErrMalformedSubject = errors.New("delivery subject does not parse")
	// ErrSenderMismatch: from is missing, or from.id is not the subject's sender token (SPEC §5).
	ErrSenderMismatch = errors.New("payload sender does not match the subject sender")
	// ErrMalformedJSON: the payload is not valid UTF-8 JSON of the expected shape (SPEC §5).
	ErrMalformedJSON = errors.New("payload is not a valid UTF-8 JSON envelope")
)

// Validation errors: a value does not meet the contract. Returned before a publish or write, or
// when a stored record is read (a reader drops the record and counts it, docs/hostile-agents.md
// "Reply subjects are the requester's").
var (
	// ErrInvalidChannel: a channel name breaks the syntax of SPEC §3.
	ErrInvalidChannel = errors.New("invalid channel")
	// ErrReservedSubject: a subject lies in a broker or JetStream namespace (SPEC §3).
	ErrReservedSubject = errors.New("subject uses a reserved prefix")
	// ErrInvalidPart: a Part breaks SPEC §5 or the schema.
	ErrInvalidPart = errors.New("invalid part")
	// ErrInvalidMessage: a CotalMessage breaks SPEC §5 or the schema.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrInvalidControl: a control request, reply or reply subject breaks SPEC §5 or
	// docs/storage.md "Control service".
	ErrInvalidControl = errors.New("invalid control message")
	// ErrInvalidPresence: a presence row is not the valid Presence of its key (SPEC §6).
	ErrInvalidPresence = errors.New("invalid presence")
	// ErrInvalidChannelConfig: a ChannelConfig or ChannelDefaults breaks SPEC §7.
	ErrInvalidChannelConfig = errors.New("invalid channel config")
	// ErrInvalidRecord: an ACL or membership registry record is not valid (docs/storage.md).
	ErrInvalidRecord = errors.New("invalid registry record")
	// ErrInvalidLink: a join link breaks the grammar of SPEC §10.
	ErrInvalidLink = errors.New("invalid join link")
)

// ErrControlRefused is returned by ControlReply.Err when the server answered ok=false.
var ErrControlRefused = errors.New("control request refused")

// Reason tokens of SPEC §5 "Rejection reasons", for logs, metrics and ControlReply.Error.
const (
	ReasonMalformedSubject = "malformed-subject"
	ReasonSenderMismatch   = "sender-mismatch"
	ReasonMalformedJSON    = "malformed-json"
)

// reasons pairs every reason token with its sentinel, so the two can never drift apart.
var reasons = []struct {
	reason string
	err    error
}{
	{ReasonMalformedSubject, ErrMalformedSubject},
	{ReasonSenderMismatch, ErrSenderMismatch},
	{ReasonMalformedJSON, ErrMalformedJSON},
}

// Anomaly is a permanent wire anomaly: Reason is one of the SPEC §5 reason tokens and Err says
// what exactly was wrong. errors.Is(a, ErrX) holds for the sentinel that matches Reason, so
// callers may test either the sentinel or the reason.
type Anomaly struct {
	Reason string
	Err    error
}

// Error prefixes the detail with the reason token, so every log line carries it.
func (a *Anomaly) Error() string {
	if a.Err == nil {
		return a.Reason
	}
	return a.Reason + ": " + a.Err.Error()
}

// Unwrap returns the detail error.
func (a *Anomaly) Unwrap() error { return a.Err }

// Is reports whether target is the sentinel of a's reason.
func (a *Anomaly) Is(target error) bool {
	for _, r := range reasons {
		if r.reason == a.Reason {
			return target == r.err
		}
	}
	return false
}

// ReasonOf returns the SPEC §5 reason token err carries, and false when err is not a permanent
// anomaly (a transient failure the caller may retry or nak).
func ReasonOf(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var a *Anomaly
	if errors.As(err, &a) && a.Reason != "" {
		return a.Reason, true
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason, true
		}
	}
	return "", false
}

// anomalyf returns an *Anomaly for reason with a formatted detail; Anomaly.Is supplies the
// sentinel, so the detail says only what was wrong.
func anomalyf(reason, format string, args ...any) error {
	return &Anomaly{Reason: reason, Err: fmt.Errorf(format, args...)}
}

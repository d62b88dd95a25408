package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ControlRequest is a request/reply command to a service on the ctl rail (SPEC §5), sent on
// cotal.<s>.ctl.<service>.<sender>.
type ControlRequest struct {
	// Op names the operation, e.g. "durableJoin" on the delivery service (docs/storage.md
	// "Control service").
	Op string `json:"op"`
	// Args is the operation's argument object, if any.
	Args json.RawMessage `json:"args,omitempty"`
	// From is the requester; a server acts only when From.ID is the subject sender.
	From EndpointRef `json:"from"`
}

// ControlReply answers a ControlRequest on the transport reply subject (SPEC §5). A refused
// request replies OK false with Error saying why.
type ControlReply struct {
	// OK reports whether the request was carried out.
	OK bool `json:"ok"`
	// Data is the operation's result, if any.
	Data json.RawMessage `json:"data,omitempty"`
	// Error says why a request was refused.
	Error string `json:"error,omitempty"`
}

// NewControlRequest returns a request for op with args encoded as a JSON object; nil args
// sends none.
func NewControlRequest(op string, args any, from EndpointRef) (*ControlRequest, error) {
	r := &ControlRequest{Op: op, From: from}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("control request %q args: %w", op, err)
		}
		r.Args = raw
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks a request against SPEC §5: a non-empty op, args absent or an object, and a
// from with a non-empty id. Errors wrap ErrInvalidControl.
func (r *ControlRequest) Validate() error {
	switch {
	case r.Op == "":
		return fmt.Errorf("%w: op is empty", ErrInvalidControl)
	case r.Args != nil && !isObject(r.Args):
		return fmt.Errorf("%w: args of %q must be a JSON object", ErrInvalidControl, r.Op)
	case r.From.ID == "":
		return fmt.Errorf("%w: from.id is empty", ErrInvalidControl)
	}
	return nil
}

// DecodeControlRequest decodes and validates a control request payload. Every error is an
// *Anomaly: sender-mismatch when from or from.id is missing, malformed-json otherwise.
func DecodeControlRequest(data []byte) (*ControlRequest, error) {
	var w struct {
		Op   *string         `json:"op"`
		Args json.RawMessage `json:"args"`
		From *wireRef        `json:"from"`
	}
	if err := decodeObject(data, &w); err != nil {
		return nil, err
	}
	if w.From == nil || w.From.ID == nil || *w.From.ID == "" {
		return nil, anomalyf(ReasonSenderMismatch, "control request has no from.id")
	}
	r := &ControlRequest{Op: deref(w.Op), From: EndpointRef{ID: *w.From.ID, Name: deref(w.From.Name), Role: w.From.Role}}
	if !isNull(w.Args) {
		r.Args = w.Args
	}
	if err := r.Validate(); err != nil {
		return nil, anomalyf(ReasonMalformedJSON, "%w", err)
	}
	return r, nil
}

// CheckControlRequest is the whole check a control server makes before acting (SPEC §5): the
// subject must parse with kind ctl, the payload must decode, and from.id must be the subject
// sender (compared sanitized, as in CheckDelivery). Every error is an *Anomaly; its text is fit
// for ControlReply.Error.
func CheckControlRequest(subject string, payload []byte) (Subject, *ControlRequest, error) {
	sub, err := ParseSubject(subject)
	if err != nil {
		return Subject{}, nil, err
	}
	if sub.Kind != KindCtl {
		return Subject{}, nil, anomalyf(ReasonMalformedSubject, "%q is not a ctl subject", subject)
	}
	r, err := DecodeControlRequest(payload)
	if err != nil {
		return sub, nil, err
	}
	if Sanitize(r.From.ID) != sub.Sender {
		return sub, nil, anomalyf(ReasonSenderMismatch,
			"from.id %q is not the subject sender %q", r.From.ID, sub.Sender)
	}
	return sub, r, nil
}

// ReplyOK returns a successful reply carrying data encoded as JSON; nil data sends none.
func ReplyOK(data any) (ControlReply, error) {
	if data == nil {
		return ControlReply{OK: true}, nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return ControlReply{}, fmt.Errorf("control reply data: %w", err)
	}
	return ControlReply{OK: true, Data: raw}, nil
}

// ReplyError returns a refusal saying why (SPEC §5).
func ReplyError(reason string) ControlReply { return ControlReply{Error: reason} }

// Err returns nil for a successful reply and otherwise an error wrapping ErrControlRefused
// with the server's reason.
func (r ControlReply) Err() error {
	if r.OK {
		return nil
	}
	if r.Error == "" {
		return fmt.Errorf("%w without a reason", ErrControlRefused)
	}
	return fmt.Errorf("%w: %s", ErrControlRefused, r.Error)
}

// DecodeControlReply decodes a reply payload, which must be a JSON object with a boolean ok.
// Errors are malformed-json anomalies.
func DecodeControlReply(data []byte) (*ControlReply, error) {
	var w struct {
		OK    *bool           `json:"ok"`
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}
	if err := decodeObject(data, &w); err != nil {
		return nil, err
	}
	if w.OK == nil {
		return nil, anomalyf(ReasonMalformedJSON, "%w: ok is missing", ErrInvalidControl)
	}
	r := &ControlReply{OK: *w.OK, Error: w.Error}
	if !isNull(w.Data) {
		r.Data = w.Data
	}
	return r, nil
}

// ControlReplySubject returns a fresh reply subject inside the request subject's own .reply.
// subtree, cotal.<s>.ctl.<service>.<sender>.reply.<uuid> (docs/storage.md "Control service"),
// which the requester's credential may subscribe to and CheckControlReplySubject accepts.
func ControlReplySubject(requestSubject string) string {
	return requestSubject + ".reply." + NewMessageID()
}

// CheckControlReplySubject refuses a reply subject outside the request subject's .reply.
// subtree. The broker does not check reply subjects and an answer goes wherever one points
// (docs/hostile-agents.md "Reply subjects are the requester's"), so a server answers only
// inside the requester's own subtree. A broker-made response route (_R_.…) is refused too:
// behind it the reply subject the requester named is hidden, and may be anyone's.
func CheckControlReplySubject(requestSubject, reply string) error {
	token, ok := strings.CutPrefix(reply, requestSubject+".reply.")
	if !ok || !IsToken(token) {
		return fmt.Errorf("%w: reply subject %q is not %s.reply.<token>",
			ErrInvalidControl, reply, requestSubject)
	}
	return nil
}

// RequestIDHeader carries a control request's id, unique per request (the client uses its
// reply subject's token). A server serves one id of one sender once: the broker can deliver a
// request twice while it re-registers an account's imports.
const RequestIDHeader = "Cotal-Request-Id"

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}

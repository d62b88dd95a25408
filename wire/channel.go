package wire

import (
	"fmt"
	"strings"
)

// MaxChannelLen bounds a channel name in bytes. Sanitizing maps each byte to one byte, so the
// bound holds before and after SanitizeChannel. It keeps the longest subject built from a
// channel, the pinned history create $JS.API.CONSUMER.CREATE.CHAT_<s>.chathist_<id>.cotal.<s>.
// chat.*.<channel> (SPEC §9 item 4), and the <channel>/<id> membership key well inside the
// broker's limits. SPEC §3 sets no bound; this is cotal's.
const MaxChannelLen = 200

// ValidateChannel checks the dotted channel syntax of SPEC §3, as a subscription or allow-list
// pattern: at most MaxChannelLen bytes, no empty segment, `*` and `>` only as whole segments,
// `>` only as the last one. Segments are otherwise free text; subjects carry them sanitized.
func ValidateChannel(ch string) error {
	if ch == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidChannel)
	}
	if len(ch) > MaxChannelLen {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidChannel, len(ch), MaxChannelLen)
	}
	i, afterGT := 0, false
	for s := range strings.SplitSeq(ch, ".") {
		switch {
		case afterGT:
			return fmt.Errorf("%w %q: `>` must be the last segment", ErrInvalidChannel, ch)
		case s == "":
			return fmt.Errorf("%w %q: empty segment %d; segments are separated by single dots",
				ErrInvalidChannel, ch, i)
		case s != "*" && s != ">" && strings.ContainsAny(s, "*>"):
			return fmt.Errorf("%w %q: segment %q mixes a wildcard with text; `*` and `>` stand alone",
				ErrInvalidChannel, ch, s)
		}
		i, afterGT = i+1, s == ">"
	}
	return nil
}

// ValidatePublishChannel checks a publish target (SPEC §3, §7): a valid channel with no
// wildcard segment.
func ValidatePublishChannel(ch string) error {
	if err := ValidateChannel(ch); err != nil {
		return err
	}
	if hasWildcard(ch) {
		return fmt.Errorf("%w %q: a publish target must be concrete, without `*` or `>`",
			ErrInvalidChannel, ch)
	}
	return nil
}

// ValidatePolicyChannel checks a channel of an ACL policy (allowSubscribe, allowPublish,
// subscribe; SPEC §9): a valid channel whose every non-wildcard segment is already sanitized.
// A segment that Sanitize would rewrite is refused, so "foo/bar" cannot mint a grant that
// silently covers the different channel "foo_bar".
func ValidatePolicyChannel(ch string) error {
	if err := ValidateChannel(ch); err != nil {
		return err
	}
	for _, s := range strings.Split(ch, ".") {
		if s != "*" && s != ">" && Sanitize(s) != s {
			return fmt.Errorf("%w %q: segment %q has characters outside [A-Za-z0-9_-]; "+
				"write the sanitized form %q", ErrInvalidChannel, ch, s, Sanitize(s))
		}
	}
	return nil
}

// MatchChannel reports whether the concrete channel matches pattern with NATS subject
// semantics (SPEC §3, §9): `*` matches exactly one segment and a final `>` one or more, so
// team.> matches team.a and team.a.b but not team. Segments compare byte for byte, so pass the
// sanitized forms. A channel that is not concrete, or either argument failing ValidateChannel,
// never matches.
func MatchChannel(pattern, channel string) bool {
	if ValidateChannel(pattern) != nil || ValidatePublishChannel(channel) != nil {
		return false
	}
	return SubjectMatches(pattern, channel)
}

// SubjectMatches reports whether the concrete subject matches filter with NATS subject
// semantics: `*` matches exactly one token and a final `>` one or more. Tokens compare byte
// for byte; neither argument is validated.
func SubjectMatches(filter, subject string) bool {
	for {
		f, frest, fmore := strings.Cut(filter, ".")
		if f == ">" && !fmore {
			return subject != ""
		}
		s, srest, smore := strings.Cut(subject, ".")
		if f != "*" && f != s {
			return false
		}
		if !fmore || !smore {
			return fmore == smore
		}
		filter, subject = frest, srest
	}
}

// hasWildcard reports whether a channel has a `*` or `>` segment.
func hasWildcard(ch string) bool {
	for s := range strings.SplitSeq(ch, ".") {
		if s == "*" || s == ">" {
			return true
		}
	}
	return false
}

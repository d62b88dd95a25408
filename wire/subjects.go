package wire

import "strings"

// SanitizeChannel sanitizes each dotted segment of a channel (SPEC §3), keeping the wildcards
// `*` and `>` when they stand as whole segments. It does not validate; see ValidateChannel.
func SanitizeChannel(channel string) string {
	if sanitizedChannel(channel) {
		return channel // the common case, which then costs no allocation
	}
	segs := strings.Split(channel, ".")
	for i, s := range segs {
		if s != "*" && s != ">" {
			segs[i] = Sanitize(s)
		}
	}
	return strings.Join(segs, ".")
}

// sanitizedChannel reports whether every segment of channel is one Sanitize keeps.
func sanitizedChannel(channel string) bool {
	for seg := range strings.SplitSeq(channel, ".") {
		if !tokenBytes(seg) {
			return false
		}
	}
	return true
}

// ChatSubject is cotal.<s>.chat.<sender>.<channel...> (SPEC §3), the multicast subject.
func (n Names) ChatSubject(sender, channel string) string {
	return n.Prefix() + ".chat." + Sanitize(sender) + "." + SanitizeChannel(channel)
}

// ChatFilter is cotal.<s>.chat.*.<channel>: every sender's messages on channel, the live
// subscription subject and the pinned history filter (SPEC §8, Appendix B). channel may be a
// wildcard pattern such as team.>.
func (n Names) ChatFilter(channel string) string {
	return n.Prefix() + ".chat.*." + SanitizeChannel(channel)
}

// InstSubject is cotal.<s>.inst.<target>.<sender> (SPEC §3), the unicast subject.
func (n Names) InstSubject(target, sender string) string {
	return n.Prefix() + ".inst." + Sanitize(target) + "." + Sanitize(sender)
}

// SvcSubject is cotal.<s>.svc.<role>.<sender> (SPEC §3), the anycast subject.
func (n Names) SvcSubject(role, sender string) string {
	return n.Prefix() + ".svc." + Sanitize(role) + "." + Sanitize(sender)
}

// CtlSubject is cotal.<s>.ctl.<service>.<sender> (SPEC §3, §5), a control request subject.
func (n Names) CtlSubject(service, sender string) string {
	return n.Prefix() + ".ctl." + Sanitize(service) + "." + Sanitize(sender)
}

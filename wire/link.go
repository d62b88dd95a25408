package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPort is the port a join link without one connects to (SPEC §10).
const DefaultPort = 4222

// Link is a parsed join link (SPEC §10):
//
//	cotal://[token@]host[:port]/space[?channel=a,b]    plaintext
//	cotals://[token@]host[:port]/space[?channel=a,b]   TLS required
//	cotal://user:pass@host/space                       user/password auth
//
// Token, User and Password are secrets: String includes them, Redacted and LogValue do not.
type Link struct {
	// TLS is set by the cotals scheme: connect with TLS required.
	TLS bool
	// Host is a DNS name or an IP address, IPv6 without brackets.
	Host string
	// Port is the broker port, DefaultPort when the link names none.
	Port int
	// Space is the space name.
	Space string
	// Channels are the channels to join at boot, deduplicated in link order.
	Channels []string
	// Token is a bare userinfo without a colon.
	Token string
	// User and Password come from a user:pass userinfo.
	User, Password string
}

// ParseLink parses a join link (SPEC §10). The channel and channels query parameters are
// equivalent comma-separated lists and are merged. Every error wraps ErrInvalidLink and names
// the part of the link that is wrong.
func ParseLink(s string) (Link, error) {
	if !strings.Contains(s, "://") && !strings.HasPrefix(s, "cotal:") && !strings.HasPrefix(s, "cotals:") {
		// A bare host:port: url.Parse would say "first path segment in URL cannot contain
		// colon", or read localhost as the scheme, neither of which helps.
		return Link{}, fmt.Errorf("%w: no scheme; a join link is cotal://host:port/space (cotals:// for TLS)", ErrInvalidLink)
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the whole link, credentials included; keep only what went wrong.
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			err = uerr.Err
		}
		return Link{}, fmt.Errorf("%w: %w", ErrInvalidLink, err)
	}
	var l Link
	switch u.Scheme {
	case "cotal":
	case "cotals":
		l.TLS = true
	default:
		return Link{}, fmt.Errorf("%w: scheme %q, want cotal:// or cotals://", ErrInvalidLink, u.Scheme)
	}
	if u.Opaque != "" || u.Fragment != "" || u.RawFragment != "" {
		return Link{}, fmt.Errorf("%w: want scheme://host/space with no #fragment", ErrInvalidLink)
	}
	if err := l.parseHost(u); err != nil {
		return Link{}, err
	}
	if err := l.parseUserinfo(u.User); err != nil {
		return Link{}, err
	}
	l.Space = strings.TrimPrefix(u.Path, "/")
	if l.Space == "" || strings.Contains(l.Space, "/") {
		return Link{}, fmt.Errorf("%w: path %q, want exactly one /space segment", ErrInvalidLink, u.Path)
	}
	if err := l.parseQuery(u.RawQuery); err != nil {
		return Link{}, err
	}
	return l, nil
}

func (l *Link) parseHost(u *url.URL) error {
	l.Host = u.Hostname()
	if !validHost(l.Host) {
		return fmt.Errorf("%w: host %q, want a DNS name or an IP address", ErrInvalidLink, l.Host)
	}
	l.Port = DefaultPort
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %q, want 1 to 65535", ErrInvalidLink, p)
		}
		l.Port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("%w: empty port after %q", ErrInvalidLink, u.Host)
	}
	return nil
}

// validHost accepts an IP address without a zone, or a DNS name whose dot-separated labels
// are non-empty and made of letters, digits, '-' and '_'.
func validHost(h string) bool {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	for _, label := range strings.Split(h, ".") {
		if !IsToken(label) {
			return false
		}
	}
	return true
}

func (l *Link) parseUserinfo(ui *url.Userinfo) error {
	if ui == nil {
		return nil
	}
	pass, hasPass := ui.Password()
	switch {
	case !hasPass && ui.Username() == "":
		return fmt.Errorf("%w: empty token before @", ErrInvalidLink)
	case !hasPass:
		l.Token = ui.Username()
	case ui.Username() == "" || pass == "":
		return fmt.Errorf("%w: user:pass needs both a user and a password", ErrInvalidLink)
	default:
		l.User, l.Password = ui.Username(), pass
	}
	return nil
}

// parseQuery reads the channel lists in link order; url.ParseQuery would lose the order
// between parameters.
func (l *Link) parseQuery(raw string) error {
	seen := map[string]bool{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		key, value, ok := strings.Cut(pair, "=")
		if key != "channel" && key != "channels" {
			return fmt.Errorf("%w: unknown query parameter %q, want channel or channels", ErrInvalidLink, key)
		}
		list, err := url.QueryUnescape(value)
		if !ok || err != nil {
			return fmt.Errorf("%w: %q, want %s=a,b", ErrInvalidLink, pair, key)
		}
		for ch := range strings.SplitSeq(list, ",") {
			if err := ValidateChannel(ch); err != nil {
				return fmt.Errorf("%w: %s=%q: %w", ErrInvalidLink, key, list, err)
			}
			if !seen[ch] {
				seen[ch] = true
				l.Channels = append(l.Channels, ch)
			}
		}
	}
	return nil
}

// String formats the link back, credentials included, so that ParseLink(l.String()) == l for
// every l that ParseLink returned. The default port is left out.
func (l Link) String() string { return l.format(l.userinfo()) }

// Redacted is String with the token or password replaced by "xxxxx", safe to log.
func (l Link) Redacted() string {
	switch {
	case l.Token != "":
		return l.format(url.User("xxxxx"))
	case l.User != "":
		return l.format(url.UserPassword(l.User, "xxxxx"))
	}
	return l.format(nil)
}

// LogValue makes log/slog print the redacted link, never its credentials.
func (l Link) LogValue() slog.Value { return slog.StringValue(l.Redacted()) }

// ServerURL is the broker URL for the NATS client, without credentials, which travel as
// connect options (SPEC §10): nats://host:port, or tls://host:port for a cotals link.
func (l Link) ServerURL() string {
	scheme := "nats"
	if l.TLS {
		scheme = "tls"
	}
	return scheme + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

func (l Link) userinfo() *url.Userinfo {
	switch {
	case l.Token != "":
		return url.User(l.Token)
	case l.User != "":
		return url.UserPassword(l.User, l.Password)
	}
	return nil
}

func (l Link) format(ui *url.Userinfo) string {
	var b strings.Builder
	b.WriteString("cotal")
	if l.TLS {
		b.WriteString("s")
	}
	b.WriteString("://")
	if ui != nil {
		b.WriteString(ui.String() + "@")
	}
	host := l.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	b.WriteString(host)
	if l.Port != DefaultPort {
		b.WriteString(":" + strconv.Itoa(l.Port))
	}
	b.WriteString("/" + url.PathEscape(l.Space))
	for i, ch := range l.Channels {
		if i == 0 {
			b.WriteString("?channel=")
		} else {
			b.WriteString(",")
		}
		b.WriteString(channelEscaper.Replace(url.QueryEscape(ch)))
	}
	return b.String()
}

// channelEscaper keeps the wildcards readable in a formatted link; both parse back unescaped.
var channelEscaper = strings.NewReplacer("%2A", "*", "%3E", ">")

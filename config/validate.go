package config

import (
	"github.com/cotal-go/cotal/internal/local"

	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// spaceToken is a space name SPEC §3 sanitization leaves unchanged; notToken is one character
// it would replace with '_'.
var (
	spaceToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	notToken   = regexp.MustCompile(`[^A-Za-z0-9_-]`)
)

// minDuration is the shortest sync_interval and expiry: JWT expiry has whole-second
// resolution, and a sub-second fsync interval is "always" in all but name.
const minDuration = time.Second

// otherStreamBytes is what a space's streams other than DM and TASK take (CHAT, INBOX, DLV and
// the KV buckets), from the layout's own total.
var otherStreamBytes = func() int64 {
	l := wire.DefaultStreamLimits()
	return l.Total() - l.DMBytes - l.TaskBytes
}()

// maxPayload is nats-server's default max_payload, which the broker keeps: a credential's
// payload limit above it changes nothing.
const maxPayload = 1 << 20

// fieldError is one problem with one key; it wraps ErrInvalid.
type fieldError struct {
	key, problem string
}

func (e fieldError) Error() string { return e.key + ": " + e.problem }
func (e fieldError) Unwrap() error { return ErrInvalid }

// Validate reports every problem of c joined with errors.Join, each naming the key and the
// fix and wrapping ErrInvalid; nil means c is usable. It checks that TLS files exist but does
// not read them.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fieldError{key: key, problem: fmt.Sprintf(format, args...)})
	}
	if c.Dir == "" {
		add("dir", "empty, and the user's data directory is unknown ($HOME or %%LocalAppData%% unset); set --dir, COTAL_DIR or dir in the config file")
	}
	if err := checkAddr(c.Listen); err != nil {
		add("listen", "%q is not host:port (%v); use e.g. 127.0.0.1:4222, or \"\" for no TCP listener", c.Listen, err)
	}
	if err := checkAddr(c.HTTP); err != nil {
		add("http", "%q is not host:port (%v); use e.g. 127.0.0.1:8222, or \"\" to turn monitoring off", c.HTTP, err)
	} else if c.HTTP != "" && !c.HTTPPublic && !local.IsLoopback(c.HTTP) {
		add("http", "%q binds beyond this machine, and monitoring shows the mesh's connections and accounts; use a loopback address such as 127.0.0.1:8222, or set http_public to expose it on purpose", c.HTTP)
	}
	if err := c.checkOpenBind(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.checkSpaces()...)
	errs = append(errs, c.TLS.check()...)
	if c.Sync != "always" && c.Sync != "interval" {
		add("sync", "%q is not a sync mode; use always or interval", c.Sync)
	}
	if c.SyncInterval < minDuration {
		add("sync_interval", "%v is too short; use at least %v, e.g. 2m", c.SyncInterval, minDuration)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		add("log.format", "%q is not a log format; use text or json", c.Log.Format)
	}
	if _, ok := logLevels[c.Log.Level]; !ok {
		add("log.level", "%q is not a log level; use debug, info, warn or error", c.Log.Level)
	}
	if c.Expiry < minDuration {
		add("expiry", "%v is too short for a credential lifetime; use at least %v, e.g. 24h", c.Expiry, minDuration)
	}
	errs = append(errs, c.Limits.check()...)
	errs = append(errs, c.Cluster.check()...)
	errs = append(errs, c.checkLeaf()...)
	return errors.Join(errs...)
}

// check reports every limit below its floor, or the storage of a space too small for its
// DM and task streams.
func (l Limits) check() []error {
	var errs []error
	atLeast := func(key string, v, least int64, example string) {
		if v < least {
			errs = append(errs, fieldError{key, fmt.Sprintf("%d is below the least useful value %d; use e.g. %s", v, least, example)})
		}
	}
	atLeast("limits.connections", int64(l.Connections), 10, "1000")
	atLeast("limits.connections_per_identity", int64(l.ConnectionsPerIdentity), 1, "32")
	atLeast("limits.subscriptions", int64(l.Subscriptions), 10, "1000")
	atLeast("limits.payload", int64(l.Payload), 1<<10, "1048576")
	atLeast("limits.dm_bytes", l.DMBytes, 1<<20, "268435456")
	atLeast("limits.task_bytes", l.TaskBytes, 1<<20, "268435456")
	atLeast("limits.per_subject", l.PerSubject, 1, "1000")
	atLeast("limits.watch_consumers", int64(l.WatchConsumers), 10, "2000")
	atLeast("limits.watches_per_identity", int64(l.WatchesPerIdentity), 2, "8")
	atLeast("limits.channels_per_identity", int64(l.ChannelsPerIdentity), 10, "1000")
	if l.Payload > maxPayload {
		errs = append(errs, fieldError{"limits.payload", fmt.Sprintf("%d is above the broker's own maximum %d; use at most that", l.Payload, maxPayload)})
	}
	if need := l.DMBytes + l.TaskBytes + otherStreamBytes; l.SpaceBytes < need {
		errs = append(errs, fieldError{"limits.space_bytes", fmt.Sprintf("%d does not hold the space's streams: limits.dm_bytes + limits.task_bytes + %d for the others = %d; use at least that",
			l.SpaceBytes, otherStreamBytes, need)})
	}
	if l.ViolationLogInterval < 0 {
		errs = append(errs, fieldError{"limits.violation_log_interval", fmt.Sprintf("%v is negative; use e.g. 10s, or 0 to log every refusal", l.ViolationLogInterval)})
	}
	return errs
}

// checkAddr accepts "" (off) or host:port with a numeric port; the host may be empty, meaning
// every interface, and port 0 picks a free port.
func checkAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

func (c Config) checkSpaces() []error {
	if len(c.Spaces) == 0 {
		return []error{fieldError{"spaces", "none given; name at least one space, e.g. main"}}
	}
	var errs []error
	seen := make(map[string]bool, len(c.Spaces))
	for i, s := range c.Spaces {
		switch {
		case s == "":
			errs = append(errs, fieldError{"spaces", fmt.Sprintf("name %d is empty; remove it or name the space", i+1)})
		case !spaceToken.MatchString(s):
			errs = append(errs, fieldError{"spaces", fmt.Sprintf("%q is not a space token (SPEC §3); use only letters, digits, _ and -, e.g. %q",
				s, notToken.ReplaceAllString(s, "_"))})
		case seen[s]:
			errs = append(errs, fieldError{"spaces", fmt.Sprintf("%q is listed twice; list each space once", s)})
		}
		seen[s] = true
	}
	return errs
}

func (t TLS) check() []error {
	switch {
	case t.Cert == "" && t.Key == "":
		return nil
	case t.Key == "":
		return []error{fieldError{"tls", "cert is set but key is not; set both tls.cert and tls.key, or neither"}}
	case t.Cert == "":
		return []error{fieldError{"tls", "key is set but cert is not; set both tls.cert and tls.key, or neither"}}
	}
	var errs []error
	for _, f := range []struct{ key, path, want string }{
		{"tls.cert", t.Cert, "a PEM certificate file"},
		{"tls.key", t.Key, "a PEM private key file"},
	} {
		switch info, err := os.Stat(f.path); {
		case err != nil:
			errs = append(errs, fieldError{f.key, fmt.Sprintf("%v; point it at %s", err, f.want)})
		case info.IsDir():
			errs = append(errs, fieldError{f.key, fmt.Sprintf("%s is a directory; point it at %s", f.path, f.want)})
		}
	}
	return errs
}

// checkOpenBind refuses an open mesh listening beyond loopback unless open_insecure_bind says
// the exposure is meant: nothing else would stand between the network and every message.
func (c Config) checkOpenBind() error {
	if !c.Open || c.OpenInsecureBind || c.Listen == "" || local.IsLoopback(c.Listen) || checkAddr(c.Listen) != nil {
		return nil
	}
	return fieldError{"listen", fmt.Sprintf("%q listens beyond loopback while open is true, so anyone who "+
		"reaches it reads and writes everything with no authentication and no TLS; listen on loopback "+
		"(127.0.0.1:4222), turn open off, or set open_insecure_bind: true to accept the exposure", c.Listen)}
}

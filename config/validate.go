package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/space"
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

// fieldError is one problem with one key; it wraps ErrInvalid.
type fieldError struct {
	key, problem string
}

func (e fieldError) Error() string { return e.key + ": " + e.problem }
func (e fieldError) Unwrap() error { return ErrInvalid }

// invalidError is a problem space reports about its own options; it wraps ErrInvalid too.
type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// invalid splits err, as errors.Join builds it, into its problems, each wrapping ErrInvalid.
func invalid(err error) []error {
	if err == nil {
		return nil
	}
	problems := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	}
	out := make([]error, len(problems))
	for i, p := range problems {
		out[i] = invalidError{p}
	}
	return out
}

// Validate reports every problem of c joined with errors.Join, each naming the key and the
// fix and wrapping ErrInvalid; nil means c is usable. Limits and Log are checked by their own
// Validate, the rules space.Start applies too; the loader adds its own floors (sync_interval
// and expiry at least 1s) and checks that TLS files exist, without reading them.
func Validate(c space.Options) error {
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
	if err := checkOpenBind(c); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkSpaces(c.Spaces)...)
	errs = append(errs, checkTLS(c.TLS)...)
	if c.Sync != broker.SyncAlways && c.Sync != broker.SyncInterval {
		add("sync", "%q is not a sync mode; use always or interval", c.Sync)
	}
	if c.SyncInterval < minDuration {
		add("sync_interval", "%v is too short; use at least %v, e.g. 2m", c.SyncInterval, minDuration)
	}
	errs = append(errs, invalid(c.Log.Validate())...)
	if c.Expiry < minDuration {
		add("expiry", "%v is too short for a credential lifetime; use at least %v, e.g. 24h", c.Expiry, minDuration)
	}
	errs = append(errs, invalid(c.Limits.Validate())...)
	errs = append(errs, checkCluster(c.Cluster)...)
	errs = append(errs, checkLeaf(c)...)
	return errors.Join(errs...)
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

func checkSpaces(spaces []string) []error {
	if len(spaces) == 0 {
		return []error{fieldError{"spaces", "none given; name at least one space, e.g. main"}}
	}
	var errs []error
	seen := make(map[string]bool, len(spaces))
	for i, s := range spaces {
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

func checkTLS(t space.TLSOptions) []error {
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
func checkOpenBind(c space.Options) error {
	if !c.Open || c.OpenInsecureBind || c.Listen == "" || local.IsLoopback(c.Listen) || checkAddr(c.Listen) != nil {
		return nil
	}
	return fieldError{"listen", fmt.Sprintf("%q listens beyond loopback while open is true, so anyone who "+
		"reaches it reads and writes everything with no authentication and no TLS; listen on loopback "+
		"(127.0.0.1:4222), turn open off, or set open_insecure_bind: true to accept the exposure", c.Listen)}
}

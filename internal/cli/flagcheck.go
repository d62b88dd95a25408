package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/wire"
)

// checkSpaceFlag refuses a --space value that is not a space token (SPEC §3), on any command
// that has the flag, before anything runs.
func checkSpaceFlag(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("space")
	if f == nil || !f.Changed {
		return nil
	}
	values := []string{f.Value.String()}
	if s, ok := f.Value.(pflag.SliceValue); ok {
		values = s.GetSlice()
	}
	for _, v := range values {
		if v == "" || wire.Sanitize(v) != v {
			return fmt.Errorf("--space %q: a space name is letters, digits, '_' and '-' only (SPEC §3), e.g. %q", v, wire.Sanitize(v))
		}
	}
	return nil
}

// checkUpFlags refuses a bad value of one of up's configuration flags before anything runs:
// the values the user set, over the defaults, go through config.Validate, so the rules and the
// messages are config's, and only the flags' own problems are reported. TLS files, which may
// pair a flag with the file, are checked at load.
func checkUpFlags(cmd *cobra.Command) error {
	c := config.Default()
	c.Dir = "flags" // the data directory is resolved and checked at load, not here
	fs := cmd.Flags()
	str := func(name string, field *string) {
		if fs.Changed(name) {
			*field, _ = fs.GetString(name)
		}
	}
	str("listen", &c.Listen)
	str("http", &c.HTTP)
	if fs.Changed("sync") {
		sync, _ := fs.GetString("sync")
		c.Sync = broker.SyncMode(sync)
	}
	if fs.Changed("space") {
		c.Spaces, _ = fs.GetStringSlice("space")
	}
	err := config.Validate(c)
	if err == nil {
		return nil
	}
	var lines []string
	for _, e := range unjoin(err) {
		key, problem, _ := strings.Cut(e.Error(), ": ")
		lines = append(lines, "--"+flagOfKey(key)+": "+problem)
	}
	return errors.New(strings.Join(lines, "\n"))
}

// flagOfKey is the up flag that sets the config key key.
func flagOfKey(key string) string {
	for flag, k := range upConfigFlags {
		if k == key {
			return flag
		}
	}
	return key
}

// unjoin splits an errors.Join result into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

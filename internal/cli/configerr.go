package cli

import (
	"regexp"
	"strings"
)

// decodeProblem is one problem in koanf's multi-line decode error: 'key' problem.
var decodeProblem = regexp.MustCompile(`^'([^']+)' (.+)$`)

// cleanConfigError turns koanf's multi-line decode error ("LAYER: decoding failed due to the
// following error(s):\n\n'listen' expected type 'string'") into one line per key naming the
// layer and the key; config's own problems (a duration names its allowed units) read as they
// are. Any other error is returned as is.
func cleanConfigError(err error) error {
	if err == nil {
		return nil
	}
	layer, rest, ok := strings.Cut(err.Error(), ": decoding failed due to the following error(s):")
	if !ok {
		return err
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(rest), "\n") {
		m := decodeProblem.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		lines = append(lines, layer+": key "+m[1]+": "+m[2])
	}
	if len(lines) == 0 {
		return err
	}
	return &configError{msg: strings.Join(lines, "\n"), err: err}
}

// configError is a cleaned decode error that still unwraps to the original.
type configError struct {
	msg string
	err error
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.err }

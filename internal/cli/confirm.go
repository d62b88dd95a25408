package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// onTerminal reports whether cmd's standard input is a terminal, where a person can answer a
// question; a script's input never is.
func onTerminal(cmd *cobra.Command) bool {
	f, ok := cmd.InOrStdin().(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// askYes writes question and " [y/N] " to stderr, so stdout stays for results, and reads one
// line of standard input: only y or yes, in any case, is a yes; anything else, or no answer,
// is a no.
func askYes(cmd *cobra.Command, question string) (bool, error) {
	if _, err := fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question); err != nil {
		return false, err
	}
	line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

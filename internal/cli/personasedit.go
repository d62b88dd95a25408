package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/agentfile"
)

func newPersonasNewCmd() *cobra.Command {
	var a agentfile.Agent
	var user bool
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Create an agent file (mode 0600) from flags",
		Long: `new writes NAME.md in the nearest .cotal/agents directory of the current directory or
above it (or ./.cotal/agents when there is none), or with --user in the user's. The grants
are checked as "cotal auth mint" checks them; a file of that name there is never replaced.
"cotal personas edit NAME" changes it later.`,
		Example: `  cotal personas new reviewer --role code-review --subscribe general,team.backend \
    --allow-publish team.backend --persona "You review changes posted on team.backend."`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Name = args[0]
			path, err := personaPath(a.Name, user)
			if err != nil {
				return err
			}
			text, err := a.Format()
			if err != nil {
				return err
			}
			if err := writeNewPersona(path, text); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.Role, "role", "", "anycast role the agent serves")
	f.StringVar(&a.Description, "description", "", "one line on what the agent does")
	f.StringSliceVar(&a.Tags, "tag", nil, "what the agent can do, e.g. review,go")
	f.StringSliceVar(&a.Subscribe, "subscribe", nil, "channels the agent joins at start")
	f.StringSliceVar(&a.AllowSubscribe, "allow-subscribe", nil, "read ACL, default = --subscribe")
	f.StringSliceVar(&a.AllowPublish, "allow-publish", nil, "channels the agent may post to; default none")
	f.StringVar(&a.Model, "model", "", "model the runtime runs, e.g. opus (claude --model)")
	f.StringVar(&a.Persona, "persona", "", "the persona text, appended to the runtime's system prompt")
	f.BoolVar(&user, "user", false, "write to the user's agents directory instead of the project's")
	return cmd
}

// writeNewPersona writes text to path, mode 0600, creating its directories 0700; path must not
// exist, and its directories must pass agentfile.CheckDir.
func writeNewPersona(path string, text []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := agentfile.CheckDir(dir); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; `cotal personas edit %s` changes it", path,
			strings.TrimSuffix(filepath.Base(path), agentfile.Ext))
	}
	if err != nil {
		return err
	}
	_, err = f.Write(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func newPersonasEditCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "edit NAME",
		Short: "Edit an agent file in $EDITOR; the edit is saved only if it parses",
		Long: `edit opens a copy of the agent file NAME resolves to in $EDITOR (vi without one). The
copy replaces the file only when it parses with the grants checked as "cotal auth mint"
checks them and still names NAME; otherwise the file is left as it was and the edit is kept
beside it as NAME.md` + rejectedExt + `.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, path, err := loadPersona(args[0])
			if err != nil {
				return err
			}
			return editPersona(cmd, args[0], path)
		},
	}
}

// editPersona runs the editor on a copy of path and renames it over path once it parses.
func editPersona(cmd *cobra.Command, name, path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+name+".*"+agentfile.Ext)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(old)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := runEditor(cmd, tmp.Name()); err != nil {
		return err
	}
	// The edit is checked under the name it is kept by should it not parse.
	kept := path + rejectedExt
	if err := os.Rename(tmp.Name(), kept); err != nil {
		return err
	}
	a, err := agentfile.Load(kept)
	if err == nil && a.Name != name {
		err = fmt.Errorf("the edit names the agent %q; rename with `cotal personas new %s` and `rm %s`", a.Name, a.Name, name)
	}
	if err != nil {
		return fmt.Errorf("%w, %s is unchanged: %w; the edit is kept in %s", errEditRejected, path, err, kept)
	}
	if err := os.Rename(kept, path); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "saved %s\n", path)
	return nil
}

// runEditor runs $EDITOR (its words split on spaces, so "code -w" works) on path, attached to
// the terminal.
func runEditor(cmd *cobra.Command, path string) error {
	words := strings.Fields(os.Getenv("EDITOR"))
	if len(words) == 0 {
		words = []string{"vi"}
	}
	ed := exec.Command(words[0], append(words[1:], path)...)
	ed.Stdin, ed.Stdout, ed.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := ed.Run(); err != nil {
		return fmt.Errorf("editor %s: %w; the file is unchanged", words[0], err)
	}
	return nil
}

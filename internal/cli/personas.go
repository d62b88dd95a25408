package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/agentfile"
	"github.com/cotal-go/cotal/internal/termsafe"
)

func newPersonasCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "personas",
		Short: "List, show, create, edit and remove agent files",
		Long: `personas manages agent files, offline: .cotal/agents/NAME.md, whose frontmatter is an
agent's identity and channel grants and whose body is its persona ("cotal spawn NAME" runs
one). A name is looked up in .cotal/agents of the current directory and each directory above
it up to the repository's root (the one holding .git), nearest first, then in the user's
directory (` + "`os.UserConfigDir`" + `/cotal/agents). docs/agents.md describes the format.`,
	}
	cmd.AddCommand(newPersonasListCmd(), newPersonasShowCmd(), newPersonasNewCmd(),
		newPersonasEditCmd(), newPersonasRmCmd())
	return cmd
}

// agentDirs are the agents directories seen from the current directory.
func agentDirs() (agentfile.Dirs, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return agentfile.Search(wd)
}

// loadPersona is the agent file name resolves to, read under agentfile.Load's rules. A file
// whose frontmatter names another agent is refused: the name a command is given is the
// identity it mints.
func loadPersona(name string) (*agentfile.Agent, string, error) {
	ds, err := agentDirs()
	if err != nil {
		return nil, "", err
	}
	path, err := ds.Find(name)
	if err != nil {
		return nil, "", err
	}
	a, err := agentfile.Load(path)
	if err != nil {
		return nil, "", err
	}
	if a.Name != name {
		return nil, "", fmt.Errorf("%s declares name %q, not %q; make the file's name and its `name:` agree",
			path, a.Name, name)
	}
	return a, path, nil
}

func newPersonasListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the agent files a name resolves to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ds, err := agentDirs()
			if err != nil {
				return err
			}
			entries, err := ds.List()
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(entries)
			}
			return printPersonas(cmd.OutOrStdout(), cmd.ErrOrStderr(), entries)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the names and paths as JSON")
	return cmd
}

// printPersonas is one row per entry; a file that does not parse is named on stderr.
func printPersonas(stdout, stderr io.Writer, entries []agentfile.Entry) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tSUBSCRIBE\tALLOW-PUBLISH\tFILE")
	for _, e := range entries {
		a, err := agentfile.Load(e.Path)
		if err != nil {
			fmt.Fprintf(stderr, "%s\n", termsafe.Text(err.Error()))
			continue
		}
		row(tw, e.Name, dash(a.Role), dash(strings.Join(a.Subscribe, ",")), dash(strings.Join(a.AllowPublish, ",")), e.Path)
	}
	return tw.Flush()
}

func newPersonasShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show an agent file's identity, grants and persona",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, path, err := loadPersona(args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(struct {
					*agentfile.Agent
					File string `json:"file"`
				}{a, path})
			}
			for _, f := range [][2]string{{"file", path}, {"name", a.Name}, {"role", a.Role}, {"kind", a.Kind},
				{"description", a.Description}, {"tags", strings.Join(a.Tags, ", ")},
				{"subscribe", strings.Join(a.Subscribe, ", ")}, {"allowSubscribe", strings.Join(a.AllowSubscribe, ", ")},
				{"allowPublish", strings.Join(a.AllowPublish, ", ")}, {"model", a.Model}} {
				if f[1] != "" {
					fmt.Fprintf(w, "%-15s %s\n", f[0]+":", termsafe.String(f[1]))
				}
			}
			if a.Persona != "" {
				fmt.Fprintf(w, "\n%s\n", termsafe.Text(a.Persona))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the agent as JSON")
	return cmd
}

func newPersonasRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove the agent file a name resolves to",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ds, err := agentDirs()
			if err != nil {
				return err
			}
			path, err := ds.Find(args[0])
			if err != nil {
				return err
			}
			if err := os.Remove(path); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", path)
			return nil
		},
	}
}

// errEditRejected: an edited agent file did not parse, so the file was left as it was.
var errEditRejected = errors.New("the edit was not saved")

// rejectedExt names the kept copy of an edit that did not parse; list skips it.
const rejectedExt = ".rejected"

// personaPath is where `personas new` writes name: the user's directory with user set, else
// the nearest project agents directory, else .cotal/agents of the current directory.
func personaPath(name string, user bool) (string, error) {
	if err := agentfile.CheckName(name); err != nil {
		return "", err
	}
	dir := agentfile.ProjectDir
	if user {
		d, err := agentfile.UserDir()
		if err != nil {
			return "", err
		}
		dir = d
	} else if ds, err := agentDirs(); err != nil {
		return "", err
	} else if u, _ := agentfile.UserDir(); len(ds) > 0 && ds[0] != u {
		dir = ds[0]
	}
	return filepath.Abs(filepath.Join(dir, name+agentfile.Ext))
}

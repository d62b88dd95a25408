package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

// savedContext is a mesh a client command reaches without --link and --creds, saved by
// `cotal context save` as NAME.json in contextsDir. It holds the path of the .creds file,
// never its content: the seed stays in the one file `cotal auth mint` wrote.
type savedContext struct {
	Link  string `json:"link"`
	Creds string `json:"creds"` // absolute
}

// selectedFile, in contextsDir, holds the name `cotal context select` chose.
const selectedFile = "selected"

// contextsDir is the user's configuration directory + cotal/contexts (os.UserConfigDir).
func contextsDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("saved contexts: %w", err)
	}
	return filepath.Join(base, "cotal", "contexts"), nil
}

// readPrivate reads name in contextsDir under config's rule for cotal.yaml (local.ReadPrivate),
// the directory under the same rule: a context another user could write would send the
// user's credential, or the user's messages, to a mesh of theirs.
func readPrivate(name string) ([]byte, error) {
	dir, err := contextsDir()
	if err != nil {
		return nil, err
	}
	if err := local.CheckPrivateDir(dir); err != nil {
		return nil, fmt.Errorf("saved contexts %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	data, err := local.ReadPrivate(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("saved context %s: %w", path, err)
	}
	return data, err
}

// loadContext reads the context name; one whose .creds file is gone says what to run.
func loadContext(name string) (savedContext, error) {
	var c savedContext
	if err := checkContextName(name); err != nil {
		return c, err
	}
	data, err := readPrivate(name + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		known, _ := contextNames()
		return c, unknownContext(name, known)
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("saved context %s: %w; save it again with `cotal context save %s --link LINK --creds FILE`", name, err, name)
	}
	if _, err := os.Stat(c.Creds); errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("context %s: its credential %s is gone; mint one with `cotal auth mint --name NAME --out %s` on the mesh's host, "+
			"or save the context with another: `cotal context save %s --link LINK --creds FILE`", name, c.Creds, c.Creds, name)
	}
	return c, nil
}

// unknownContext says there is no context name, with the known ones close to it.
func unknownContext(name string, known []string) error {
	return fmt.Errorf("no saved context %q; `cotal context ls` lists them%s", name, suggest.DidYouMean(suggest.Close(name, known)))
}

// contextNames are the saved contexts, sorted; none when the directory does not exist.
func contextNames() ([]string, error) {
	dir, err := contextsDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, name)
		}
	}
	return names, nil
}

// selectedContext is the name `cotal context select` chose, or "".
func selectedContext() (string, error) {
	data, err := readPrivate(selectedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(data)), err
}

// linkAndCreds is how a client command reaches a mesh by link, first found first: its --link
// and --creds, then COTAL_LINK and COTAL_CREDS, then a saved context (contextLink). Both are
// "" for the mesh beside which the command runs.
func linkAndCreds(cmd *cobra.Command, link, creds string) (string, string, error) {
	link, creds = orEnv(link, envLink), orEnv(creds, envCreds)
	if link != "" || creds != "" {
		return link, creds, nil
	}
	return contextLink(cmd)
}

// contextLink is the link and the .creds path of the context a client command uses when
// neither --link/--creds nor COTAL_LINK/COTAL_CREDS is given: --context NAME, else the
// selected one unless --dir says to reach the mesh beside which the command runs; "" for
// both when there is none, and on a command without --context, which works beside `cotal up`
// only (docs/cli.md "Saved contexts").
func contextLink(cmd *cobra.Command) (link, creds string, err error) {
	flag := cmd.Flags().Lookup("context")
	if flag == nil {
		return "", "", nil
	}
	name := flag.Value.String()
	if name == "" && !cmd.Flags().Changed("dir") {
		if name, err = selectedContext(); err != nil {
			return "", "", err
		}
	}
	if name == "" {
		return "", "", nil
	}
	c, err := loadContext(name)
	return c.Link, c.Creds, err
}

// addContextFlag is --context on a command that reaches a mesh by link.
func addContextFlag(cmd *cobra.Command) {
	cmd.Flags().String("context", "", "saved context to use (`cotal context ls`; default: the selected one)")
	_ = cmd.RegisterFlagCompletionFunc("context", completeContexts)
}

// completeContexts offers the saved contexts.
func completeContexts(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	names, _ := contextNames()
	return plainTokens(names), noFiles
}

func newContextCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Save, list, select and remove the meshes client commands reach by name",
		Long: `A saved context is a join link and the path of a .creds file under a name, kept in the
user's configuration directory (cotal/contexts/NAME.json, readable by the user alone). Client
commands (send, tail, history, who, channels list, mcp) use --context NAME, else the selected
context, when neither --link/--creds nor COTAL_LINK/COTAL_CREDS is given; --dir without
--context reaches the mesh beside which they run, as without contexts. The .creds file's
content is never copied: the context names the file.`,
	}
	cmd.AddCommand(newContextSaveCmd(), newContextLsCmd(), newContextSelectCmd(), newContextRmCmd())
	return cmd
}

func newContextSaveCmd() *cobra.Command {
	var c savedContext
	cmd := &cobra.Command{
		Use:     "save NAME --link LINK --creds FILE",
		Short:   "Save a join link and a .creds file under NAME",
		Example: `  cotal context save prod --link cotal://mesh.example:4222/main --creds ~/alice.creds`,
		Args:    exactArgs("NAME"),
		PreRunE: func(*cobra.Command, []string) error {
			if _, err := wire.ParseLink(c.Link); err != nil {
				return fmt.Errorf("--link: %w; pass the join link `cotal up` prints (`cotal link` shows it)", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkContextName(name); err != nil {
				return err
			}
			abs, err := filepath.Abs(c.Creds)
			if err != nil {
				return err
			}
			if _, _, err := readCreds(abs); err != nil {
				return err
			}
			c.Creds = abs
			data, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				return err
			}
			if err := writePrivate(name+".json", append(data, '\n')); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "saved context %s; use it with --context %s, or `cotal context select %s`\n", name, name, name)
			return err
		},
	}
	cmd.Flags().StringVar(&c.Link, "link", "", "join link of the mesh (`cotal link` prints it)")
	cmd.Flags().StringVar(&c.Creds, "creds", "", ".creds file to connect with; the context keeps its path, not its content")
	_ = cmd.MarkFlagRequired("link")
	_ = cmd.MarkFlagRequired("creds")
	_ = cmd.MarkFlagFilename("creds", "creds")
	return cmd
}

// checkContextName refuses a name that is not a plain token, which could escape contextsDir.
func checkContextName(name string) error {
	if name == "" || wire.Sanitize(name) != name {
		return fmt.Errorf("context name %q: use letters, digits, '_' and '-' only, e.g. %q", name, wire.Sanitize(name))
	}
	return nil
}

// writePrivate writes data to name in contextsDir, mode 0600, creating the directory 0700;
// an existing directory must pass local.CheckPrivateDir. The file is written whole or not
// at all (a temporary file renamed over it).
func writePrivate(name string, data []byte) error {
	dir, err := contextsDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saved contexts: %w", err)
	}
	if err := local.CheckPrivateDir(dir); err != nil {
		return fmt.Errorf("saved contexts %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("save %s in %s: %w", name, dir, err)
	}
	return nil
}

func newContextLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the saved contexts; * marks the selected one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, err := contextNames()
			if err != nil {
				return err
			}
			if len(names) == 0 {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no saved context; save one with `cotal context save NAME --link LINK --creds FILE`")
				return err
			}
			selected, err := selectedContext()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  NAME\tMESH\tCREDS")
			for _, name := range names {
				fmt.Fprintln(tw, contextRow(name, name == selected))
			}
			return tw.Flush()
		},
	}
}

// contextRow is one line of `context ls`: the mesh as space and address, never the link,
// which may carry a token; a context that cannot be used says why instead.
func contextRow(name string, selected bool) string {
	mark := " "
	if selected {
		mark = "*"
	}
	c, err := loadContext(name)
	if err != nil {
		return fmt.Sprintf("%s %s\t-\tUNUSABLE: %s", mark, name, termsafe.String(err.Error()))
	}
	mesh := "?"
	if l, err := wire.ParseLink(c.Link); err == nil {
		mesh = fmt.Sprintf("space %s at %s:%d", l.Space, l.Host, l.Port)
	}
	return fmt.Sprintf("%s %s\t%s\t%s", mark, name, termsafe.String(mesh), termsafe.String(c.Creds))
}

func newContextSelectCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "select NAME",
		Short:             "Make NAME the context client commands use by default",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := loadContext(args[0]); err != nil {
				return err
			}
			if err := writePrivate(selectedFile, []byte(args[0]+"\n")); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "selected context %s\n", args[0])
			return err
		},
	}
}

func newContextRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME",
		Short:             "Remove a saved context (its .creds file stays)",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkContextName(name); err != nil {
				return err
			}
			dir, err := contextsDir()
			if err != nil {
				return err
			}
			known, _ := contextNames()
			if !slices.Contains(known, name) {
				return unknownContext(name, known)
			}
			if err := os.Remove(filepath.Join(dir, name+".json")); err != nil {
				return err
			}
			if selected, _ := selectedContext(); selected == name {
				if err := os.Remove(filepath.Join(dir, selectedFile)); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "removed context %s\n", name)
			return err
		},
	}
}

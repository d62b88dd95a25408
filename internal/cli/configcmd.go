package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/space"
)

// configEntry is one key of the effective configuration and the layer it came from.
type configEntry struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

func newConfigCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration of `cotal up` and where each value came from",
		Long: `config prints what "cotal up" with the same flags would run with: every key, its value,
and the layer that set it: default, the config file (--config, else cotal.yaml in the data
directory), the COTAL_* environment, or a flag. Keys are those of cotal.yaml ("go doc
./config"). An invalid configuration fails as "cotal up" would; "cotal up --check" only
validates.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return checkUpFlags(cmd)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, err := effectiveConfig(cmd)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(entries)
			}
			return printConfig(cmd.OutOrStdout(), entries)
		},
	}
	// The flags are up's own, so a flag up gains is one config shows.
	newUpCmd().Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "check" {
			cmd.Flags().AddFlag(f)
		}
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

// runUpOrCheck is up's RunE: with --check it loads and validates the configuration and
// prints a summary instead of starting.
func runUpOrCheck(cmd *cobra.Command, args []string) error {
	if check, _ := cmd.Flags().GetBool("check"); !check {
		return runUp(cmd, args)
	}
	cfg, err := loadConfig(cmd, upConfigFlags)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "configuration is valid: data dir %s, listen %s, spaces %s, sync %s, open %t; `cotal config` shows every key and its source\n",
		cfg.Dir, orOff(cfg.Listen), strings.Join(cfg.Spaces, ","), cfg.Sync, cfg.Open)
	return err
}

// orOff shows an empty address as off.
func orOff(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// configLayer is the configuration loaded with the layers up to one, by key, and that layer's
// name: the values that differ from the next lower layer's came from it.
type configLayer struct {
	values map[string]string
	name   string
}

// effectiveConfig loads the configuration as up does, then again without the flags and
// without the COTAL_* variables, and names for each key the highest layer that changed it.
// A layer that sets a key to the value below it is reported as the one below.
func effectiveConfig(cmd *cobra.Command) ([]configEntry, error) {
	full, err := loadConfig(cmd, upConfigFlags)
	if err != nil {
		return nil, err
	}
	file, _ := cmd.Flags().GetString("config")
	fileDir := ""
	if file == "" {
		fileDir = configFileDir(cmd, full)
	}
	environ := os.Environ()
	noFlags, errF := config.Load(config.LoadOptions{File: file, Dir: fileDir, Env: environ})
	noEnv, errE := config.Load(config.LoadOptions{File: file, Dir: fileDir, Env: withoutCotalEnv(environ)})
	defaults := configValues(config.Default())
	layers := []configLayer{{configValues(full), "flag"}}
	if errF == nil {
		layers = append(layers, configLayer{configValues(noFlags), "env"})
	}
	if errE == nil {
		layers = append(layers, configLayer{configValues(noEnv), "file " + configFilePath(file, fileDir)})
	}
	var out []configEntry
	for _, key := range slices.Sorted(maps.Keys(defaults)) {
		e := configEntry{Key: key, Value: layers[0].values[key], Source: "default"}
		for i, l := range layers {
			below := defaults[key]
			if i+1 < len(layers) {
				below = layers[i+1].values[key]
			}
			if l.values[key] != below {
				e.Source = l.name
				break
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// configFileDir is the directory up looks in for cotal.yaml: --dir, else COTAL_DIR, else the
// effective data directory.
func configFileDir(cmd *cobra.Command, cfg space.Options) string {
	if d, _ := cmd.Flags().GetString("dir"); d != "" {
		return d
	}
	if d := os.Getenv("COTAL_DIR"); d != "" {
		return d
	}
	return cfg.Dir
}

// configFilePath names the file layer for the source column.
func configFilePath(file, dir string) string {
	if file != "" {
		return file
	}
	path := filepath.Join(dir, config.FileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "(none)"
	}
	return path
}

// withoutCotalEnv is environ without its COTAL_* variables.
func withoutCotalEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "COTAL_") {
			out = append(out, kv)
		}
	}
	return out
}

// configValues is c by its koanf keys ("tls.cert"), each value as text the file would hold.
func configValues(c space.Options) map[string]string {
	out := map[string]string{}
	for key, v := range config.Values(c) {
		out[key] = valueText(v)
	}
	return out
}

func valueText(v any) string {
	switch t := v.(type) {
	case time.Duration:
		return config.FormatDuration(t)
	case []string:
		return strings.Join(t, ",")
	case string:
		if t == "" {
			return `""`
		}
		return t
	}
	return fmt.Sprint(v)
}

func printConfig(w io.Writer, entries []configEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tFROM")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Value, e.Source)
	}
	return tw.Flush()
}

package cli

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
)

func newLinkCmd() *cobra.Command {
	var spaceName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "link",
		Short: "Print the join link of each space of the running mesh",
		Long: `link prints the join link (SPEC §10) of every space of the mesh running on the data
directory, or of --space only. A link carries no credential: a client also needs a .creds
file ("cotal auth mint"). Exit codes as in "cotal help exit-codes".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := dataDir(cmd)
			if err != nil {
				return err
			}
			c, err := meshClient(cmd, dir)
			if err != nil {
				return err
			}
			links, err := c.Links(cmd.Context())
			if err != nil {
				return err
			}
			if spaceName != "" {
				link, ok := links[spaceName]
				if !ok {
					return fmt.Errorf("the mesh on %s has no space %q; `cotal link` lists its spaces", dir, spaceName)
				}
				links = map[string]string{spaceName: link}
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(links)
			}
			names := make([]string, 0, len(links))
			for s := range links {
				names = append(names, s)
			}
			sort.Strings(names)
			for _, s := range names {
				if spaceName != "" {
					fmt.Fprintln(cmd.OutOrStdout(), links[s])
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", s, links[s])
			}
			return nil
		},
	}
	addAdminFlags(cmd, &asJSON)
	cmd.Flags().StringVar(&spaceName, "space", "", "print only this space's link, bare")
	return cmd
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/space"
)

func newDeliverCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deliver",
		Short: "Inspect what the mesh holds for delivery",
	}
	cmd.AddCommand(newDeliverPendingCmd())
	return cmd
}

func newDeliverPendingCmd() *cobra.Command {
	var spaceName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pending NAME|ID",
		Short: "Show what waits for an instance: DMs, anycasts and durable copies",
		Long: `pending shows what the mesh holds for one instance, named by its id or by the name of
exactly one active agent credential ("cotal auth list"):
  DMs             dm_<id> on DM_<space>: not yet delivered, and delivered but not acknowledged
  durable copies  dlv_<id> on DLV_<space>: copies re-authorized and handed over (SPEC §4, §7)
  anycasts        svc_<role> on TASK_<space>, shared by every holder of the role
Backstop entries not yet re-authorized are counted for the whole space ("cotal status",
reader lag).
It goes through the admin socket of the mesh on the data directory; exit codes as in
"cotal help exit-codes".`,
		Args:              exactArgs("NAME|ID"),
		ValidArgsFunction: completeAgentNames(&spaceName),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := localMesh(cmd)
			if err != nil {
				return err
			}
			b, err := c.Pending(cmd.Context(), spaceName, args[0])
			if err != nil {
				return withHint(err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(b)
			}
			return printPending(cmd.OutOrStdout(), spaceName, b)
		},
	}
	addAdminFlags(cmd, &asJSON)
	cmd.Flags().StringVar(&spaceName, "space", "main", "space of the instance")
	return cmd
}

// completeAgentNames offers the names of the active agent credentials of the mesh beside
// which the shell runs; with no mesh there it offers nothing.
func completeAgentNames(spaceName *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dir, err := dataDir(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionWait)
		defer cancel()
		c, err := admin.Dial(ctx, dir)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		recs, err := c.Credentials(ctx, *spaceName)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return plainTokens(activeAgents(recs)), cobra.ShellCompDirectiveNoFileComp
	}
}

// printPending prints b; the name, id, role and channels, which an agent's credential or its
// peers chose, are escaped (termsafe).
func printPending(w io.Writer, spaceName string, b *space.MemberBacklog) error {
	fmt.Fprintf(w, "waiting for %s (%s) in space %s:\n", termsafe.String(b.Name), termsafe.String(b.ID), termsafe.String(spaceName))
	fmt.Fprintf(w, "  DMs             %s\n", pendingLine(&b.DM))
	fmt.Fprintf(w, "  durable copies  %s\n", pendingLine(&b.Durable))
	for _, ch := range slices.Sorted(maps.Keys(b.Dropped)) {
		fmt.Fprintf(w, "  lost on %s  %d copies refused: the durable handoff was full of unacknowledged copies\n", termsafe.String(ch), b.Dropped[ch])
	}
	if b.Anycast != nil {
		fmt.Fprintf(w, "  anycasts        %s, shared by every holder of role %s\n", pendingLine(b.Anycast), termsafe.String(b.Role))
	}
	return nil
}

func pendingLine(b *space.Backlog) string {
	if b.Missing {
		return fmt.Sprintf("none kept: consumer %s does not exist (a running mesh creates it at mint, else at its next start)", termsafe.String(b.Consumer))
	}
	return fmt.Sprintf("%d pending, %d delivered and not acknowledged (%s)", b.Pending, b.AckPending, termsafe.String(b.Consumer))
}

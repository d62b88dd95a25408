package cli

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// completionWait bounds what one completion asks the mesh: the shell waits on it, so a mesh
// that does not answer within it completes nothing.
const completionWait = time.Second

// noFiles is the directive of every completion here: no value of cotal's is a local file
// unless the flag says so (MarkFlagFilename).
const noFiles = cobra.ShellCompDirectiveNoFileComp

// registerCompletions gives the flags with a fixed or a mesh's set of values their
// completions, on root and every command below it (`cotal completion`, docs/cli.md).
func registerCompletions(root *cobra.Command) {
	levels := slices.Sorted(maps.Keys(logLevels))
	_ = root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, noFiles))
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(levels, noFiles))
	walk(root, func(c *cobra.Command) {
		fixed := map[string][]string{
			"profile": {wire.ProfileAgent, wire.ProfileObserver, wire.ProfileAdmin, wire.ProfileLeaf},
			"sync":    {"always", "interval"},
		}
		for name, values := range fixed {
			if c.LocalNonPersistentFlags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, noFiles))
			}
		}
		if c.LocalNonPersistentFlags().Lookup("space") != nil {
			_ = c.RegisterFlagCompletionFunc("space", completeSpaces)
		}
	})
}

// walk calls fn on c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// completeSpaces offers the spaces of the mesh on the data directory, or, with none running
// there, the spaces the configuration provisions.
func completeSpaces(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionWait)
	defer cancel()
	dir, err := dataDir(cmd)
	if err != nil {
		return nil, noFiles
	}
	if c, err := admin.Dial(ctx, dir); err == nil {
		if links, err := c.Links(ctx); err == nil {
			return plainTokens(slices.Sorted(maps.Keys(links))), noFiles
		}
	}
	cfg, err := loadConfig(cmd, dirConfigFlags)
	if err != nil {
		return nil, noFiles
	}
	return plainTokens(cfg.Spaces), noFiles
}

// completeChannels completes a command's channel arguments; with many, each once.
func completeChannels(many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, noFiles
		}
		names := fromMesh(cmd, channelNames)
		return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(args, n) }), noFiles
	}
}

// completeAddresses completes send's first argument: the channels and @NAME of every agent.
func completeAddresses(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	return fromMesh(cmd, func(ctx context.Context, s *session, e *endpoint.Endpoint) []string {
		out := channelNames(ctx, s, e)
		for _, n := range agentNames(ctx, s, e) {
			out = append(out, "@"+n)
		}
		return out
	}), noFiles
}

// fromMesh returns what list reads from the mesh the command's flags reach, as the command
// itself would (--link and --creds, COTAL_LINK and COTAL_CREDS, else the data directory's
// admin socket, which mints a one-shot credential), all within completionWait; nothing when
// the mesh does not answer in time.
func fromMesh(cmd *cobra.Command, list func(context.Context, *session, *endpoint.Endpoint) []string) []string {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionWait)
	defer cancel()
	cmd.SetContext(ctx)
	f := &clientFlags{space: "main"}
	fs := cmd.Flags()
	for name, v := range map[string]*string{"link": &f.link, "creds": &f.creds, "space": &f.space} {
		if fl := fs.Lookup(name); fl != nil && fl.Value.String() != "" {
			*v = fl.Value.String()
		}
	}
	var out []string
	want := mintFor{command: "complete", profile: wire.ProfileAdmin, lifetime: oneShotLifetime}
	_ = withReader(cmd, f, want, func(s *session, e *endpoint.Endpoint) error {
		out = list(ctx, s, e)
		return nil
	})
	return out
}

// channelNames are the channels of the session's space, plain tokens only.
func channelNames(ctx context.Context, _ *session, e *endpoint.Endpoint) []string {
	list, err := e.Channels(ctx)
	if err != nil {
		return nil
	}
	var names []string
	for _, c := range list.Channels {
		names = append(names, c.Name)
	}
	return plainTokens(names)
}

// agentNames are the minted agents of the mesh beside which the shell runs, or, reached
// through a join link, the agents online; plain tokens only.
func agentNames(ctx context.Context, s *session, e *endpoint.Endpoint) []string {
	if s.mesh != nil {
		recs, err := s.mesh.Credentials(ctx, s.link.Space)
		if err != nil {
			return nil
		}
		return plainTokens(activeAgents(recs))
	}
	select {
	case <-e.Roster().Loaded():
		return plainTokens(onlineNames(e))
	case <-ctx.Done():
		return nil
	}
}

// activeAgents are the names of the active agent credentials among recs.
func activeAgents(recs []provisioner.Record) []string {
	var names []string
	for _, r := range recs {
		if r.Profile == provisioner.ProfileAgent && r.Active(time.Now()) {
			names = append(names, r.Name)
		}
	}
	return names
}

// plainTokens keeps the values a shell can take as they are, routing tokens (SPEC §3): a name
// or channel a peer chose could otherwise put control characters or spaces on the command
// line being edited. Duplicates go; the order is sorted.
func plainTokens(values []string) []string {
	out := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" || wire.Sanitize(v) != v })
	slices.Sort(out)
	return slices.Compact(out)
}

package space

import (
	"context"
	"fmt"
	"strings"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// TASK_<s> discards new, like DM_<s>: a full task store refuses the next anycast. A task for
// a role no agent of the registry holds waits for a worker that never comes, so a flood of
// them (or one typo repeated) would refuse every anycast after it for good. The pass takes
// them back, subject by subject (one per role and sender, so few), under the space's mint lock
// with the roles read afresh, so no role can gain a holder between the decision and the
// purge. A role is held for as long as the registry holds an agent row with it, revoked or
// not, as a DM is kept for such a row.

// taskSubjects are TASK_<s>'s subjects with their pending tasks, by sender token.
type taskSubjects map[string]map[string]uint64

// reclaimTasks deletes the tasks for roles no agent holds and returns how many, and the
// subjects it left with their counts.
func (m *Mesh) reclaimTasks(ctx context.Context, rt *spaceRuntime) (int64, taskSubjects, error) {
	kept := taskSubjects{}
	if m.store == nil {
		return 0, kept, nil
	}
	prefix := rt.names.Prefix() + ".svc."
	var tally senderTally
	var total int64
	err := rt.streamSubjects(ctx, rt.names.TaskStream(), prefix+">", func(page map[string]uint64) (int, error) {
		rt.mintMu.Lock()
		defer rt.mintMu.Unlock()
		roles, err := m.heldRoles(rt)
		if err != nil {
			return len(page), err
		}
		var reqs []purgeRequest
		for subject, n := range page {
			role, sender, _ := strings.Cut(strings.TrimPrefix(subject, prefix), ".")
			switch {
			case !roles[role]:
				reqs = append(reqs, purgeRequest{Filter: subject, sender: sender})
			case kept[sender] == nil:
				kept[sender] = map[string]uint64{subject: n}
			default:
				kept[sender][subject] = n
			}
		}
		purged, err := rt.purge(ctx, rt.names.TaskStream(), reqs, &tally)
		total += purged
		return len(page) - len(reqs), err
	})
	if total > 0 {
		rt.reconciled.purgedTasks.Add(total)
		m.log.Warn("reclaimed tasks for roles no agent holds", "space", rt.name, "purged", total,
			"senders", m.topSenders(rt.name, &tally))
	}
	if err != nil {
		return total, kept, fmt.Errorf("reclaim task space of %s: %w", rt.name, err)
	}
	return total, kept, nil
}

// heldRoles are the subject tokens of the roles of every agent in the space's registry.
func (m *Mesh) heldRoles(rt *spaceRuntime) (map[string]bool, error) {
	recs, err := m.store.List(rt.name)
	if err != nil {
		return nil, err
	}
	roles := map[string]bool{}
	for _, rec := range recs {
		if rec.Profile == provisioner.ProfileAgent && rec.Grants.Role != "" {
			roles[wire.Sanitize(rec.Grants.Role)] = true
		}
	}
	return roles, nil
}

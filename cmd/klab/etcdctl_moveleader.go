package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// moveLeaderTarget returns the index of move-leader's transferee among
// etcdctl's arguments (the first word after move-leader that is not a
// flag), or -1 when the command is not move-leader or names none.
func moveLeaderTarget(args []string) int {
	at := slices.Index(args, "move-leader")
	if at < 0 {
		return -1
	}
	for i := at + 1; i < len(args); i++ {
		if args[i] == "--" {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		if !strings.HasPrefix(args[i], "-") {
			return i
		}
	}
	return -1
}

// memberIDs maps the members' names (master-N, and etcd-N as chaos
// writes them) to their hexadecimal IDs.
func memberIDs(members []lab.MemberStatus) map[string]string {
	ids := map[string]string{}
	for _, m := range members {
		if m.ID == "" {
			continue
		}
		ids[m.Name] = m.ID
		if n, ok := strings.CutPrefix(m.Name, "master-"); ok {
			ids["etcd-"+n] = m.ID
		}
	}
	return ids
}

// nameMoveLeader lets `klab etcdctl move-leader master-2` name the
// transferee by its member's name: etcdctl takes only the hexadecimal ID,
// which changes with every cluster, so a lesson could not write it down.
// Any other argument, an ID included, is left to etcdctl.
func nameMoveLeader(ctx context.Context, name string, args []string, stderr io.Writer) ([]string, error) {
	i := moveLeaderTarget(args)
	if i < 0 || !strings.Contains(args[i], "-") {
		return args, nil
	}
	st, err := lab.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	ids := memberIDs(st.Members)
	id, ok := ids[args[i]]
	if !ok {
		return args, nil
	}
	fmt.Fprintln(stderr, i18n.T("etcdctl.move-leader-member", args[i], id))
	out := slices.Clone(args)
	out[i] = id
	return out, nil
}

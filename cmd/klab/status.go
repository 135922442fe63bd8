package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// statusTimeout bounds klab status; each member gets a second of it.
const statusTimeout = 5 * time.Second

func newStatusCmd() *cobra.Command {
	var name, output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: i18n.T("status.short"),
		Long:  i18n.T("status.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return i18n.NewError("status.err.output", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), statusTimeout)
			defer cancel()
			st, err := lab.Status(ctx, name)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(st); err != nil {
					return err
				}
			} else {
				printStatus(cmd, st)
			}
			if st.Answering() == 0 {
				return i18n.NewError("status.err.no-answer", name, nameHint(name))
			}
			return nil
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVarP(&output, "output", "o", "table", i18n.T("status.flag.output"))
	return cmd
}

func printStatus(cmd *cobra.Command, st *lab.ClusterStatus) {
	out := cmd.OutOrStdout()
	leader := st.Leader
	if leader == "" {
		leader = i18n.T("status.none")
	}
	fmt.Fprintln(out, i18n.T("status.header", st.Name, st.Runtime, leader))
	if !st.Running {
		fmt.Fprintln(out, i18n.T("status.not-running", nameHint(st.Name)))
	}
	fmt.Fprintln(out)
	var t table
	t.add(i18n.T("status.col.member"), i18n.T("status.col.id"), i18n.T("status.col.role"),
		i18n.T("status.col.term"), i18n.T("status.col.raft-index"), i18n.T("status.col.applied"),
		i18n.T("status.col.client-url"), i18n.T("status.col.health"))
	for _, m := range st.Members {
		term, index, applied := "-", "-", "-"
		if m.Error == "" {
			term = strconv.FormatUint(m.Term, 10)
			index = strconv.FormatUint(m.RaftIndex, 10)
			applied = strconv.FormatUint(m.Applied, 10)
		}
		t.add(m.Name, m.ID, word("state", m.State), term, index, applied, m.ClientURL, word("health", m.Health))
	}
	t.write(out)
	if st.EtcdCredentials != (lab.EtcdCredentials{}) {
		fmt.Fprintln(out)
		fmt.Fprintln(out, i18n.T("status.etcd-credentials", st.EtcdCredentials.CACert, st.EtcdCredentials.ClientCert, st.EtcdCredentials.ClientKey))
		if st.Runtime == lab.RuntimeDocker {
			fmt.Fprintln(out, i18n.T("status.etcd-credentials-docker"))
		}
	}
	if len(st.Alarms) > 0 {
		fmt.Fprintln(out)
		for _, a := range st.Alarms {
			fmt.Fprintln(out, i18n.T("status.alarm", a.Alarm, a.Member))
		}
		fmt.Fprintln(out, i18n.T("status.alarm-hint"))
	}
	if len(st.Timings) == 0 {
		return
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, i18n.T("status.timings", strconv.FormatFloat(st.Speed, 'g', -1, 64)))
	var tt table
	tt.add(i18n.T("status.col.timing"), i18n.T("status.col.lab"), i18n.T("status.col.upstream"))
	for _, r := range st.Timings {
		tt.add(r.Name, r.Lab.String(), r.Upstream.String())
	}
	tt.write(out)
}

// word translates a state or health word, keeping it as is when the
// catalogue does not know it (a new raft state, say).
func word(kind, w string) string {
	key := kind + "." + w
	if i18n.Current().Has(key) {
		return i18n.T(key)
	}
	return w
}

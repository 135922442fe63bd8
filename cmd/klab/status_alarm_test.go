package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// klab status says when an alarm holds the cluster, and how to clear it:
// a NOSPACE cluster otherwise looks healthy in the member table while
// every write fails.
func TestStatusShowsAlarms(t *testing.T) {
	i18n.SetLang(i18n.English)
	st := &lab.ClusterStatus{Name: "demo", Runtime: "local", Running: true, Leader: "master-1",
		Members: []lab.MemberStatus{{Name: "master-1", ID: "8e9e", State: "leader", Health: "healthy"}},
		Alarms:  []lab.AlarmStatus{{Alarm: "NOSPACE", Member: "master-1", MemberID: "8e9e"}}}
	var out bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	printStatus(cmd, st)
	for _, want := range []string{"✗ alarm NOSPACE raised by master-1", "klab etcdctl alarm disarm"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	st.Alarms = nil
	printStatus(cmd, st)
	if strings.Contains(out.String(), "alarm") {
		t.Errorf("status without alarms mentions one:\n%s", out.String())
	}
}

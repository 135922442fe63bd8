package proxy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// TestBadConfig: a configuration kube-proxy cannot use keeps the running
// mode, shows in the status, and is announced once on the stream and as a
// Warning Event; fixing it clears the error.
func TestBadConfig(t *testing.T) {
	l := newLab(t, 67)
	l.setMode(proxier.ModeIPVS, "")
	p := l.startProxy(node)
	if st := p.Status(); st.Mode != proxier.ModeIPVS || st.ConfigError != "" {
		t.Fatalf("status %+v", st)
	}
	// Upstream's start-up Event, from this node's kube-proxy.
	if ev := l.waitForKubeEvent(node, ReasonStarting); ev.ReportingController != ComponentName || ev.ReportingInstance != "kube-proxy-"+node {
		t.Errorf("Starting Event %+v", ev)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"unknown mode", kubeadm("kernelspace", "", "0s"), `unsupported value "kernelspace"`},
		{"unknown field", kubeadm("ipvs", "", "0s") + "extra: 1\n", `unknown field "extra"`},
		{"unknown scheduler", kubeadm("ipvs", "wrr", "0s"), `unsupported value "wrr"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.writeConfig(tc.data)
			waitFor(t, p, "a config error", func() bool { return strings.Contains(p.Status().ConfigError, tc.want) })
			if st := p.Status(); st.Mode != proxier.ModeIPVS || st.ConfigSource != configSourceConfigMap {
				t.Errorf("status %+v; want ipvs still running from the configmap", st)
			}
		})
	}
	past, _, cancel := p.hub.Subscribe(0)
	cancel()
	var errs []Event
	for _, e := range past {
		if e.Kind == EventConfigError {
			errs = append(errs, e)
		}
	}
	if len(errs) != 3 || errs[0].Mode != proxier.ModeIPVS {
		t.Errorf("config-error events %+v; want 3, in ipvs mode", errs)
	}
	ev := l.waitForKubeEvent(node, ReasonInvalidConfiguration)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "keeps running in ipvs mode") {
		t.Errorf("Event %+v", ev)
	}

	l.setMode(proxier.ModeIPVS, "lc")
	waitFor(t, p, "the error cleared", func() bool { return p.Status().ConfigError == "" })
	if st := p.Status(); st.IPVSScheduler != "lc" {
		t.Errorf("status %+v; want scheduler lc", st)
	}
}

// TestSchedulerChangeAndDefaults: without a ConfigMap the proxy runs the
// defaults; a new ipvs scheduler rebuilds the ipvs state; deleting the
// ConfigMap returns to the defaults.
func TestSchedulerChangeAndDefaults(t *testing.T) {
	l := newLab(t, 68)
	p := l.startProxy(node)
	st := p.Status()
	if st.Mode != proxier.ModeIPTables || st.ConfigSource != configSourceDefault || st.MinSyncPeriod != testSpeed.Scale(time.Second) ||
		st.SyncPeriod != testSpeed.Scale(30*time.Second) {
		t.Fatalf("status without a ConfigMap: %+v", st)
	}
	l.setMode(proxier.ModeIPVS, "rr")
	waitForMode(t, p, proxier.ModeIPVS)
	l.setMode(proxier.ModeIPVS, "sed")
	waitFor(t, p, "scheduler sed", func() bool { return p.Status().IPVSScheduler == "sed" })
	var rules strings.Builder
	if err := p.Rules(&rules); err != nil || !strings.Contains(rules.String(), " sed") {
		t.Errorf("ipvs rules (err %v) do not use sed:\n%s", err, rules.String())
	}
	past, _, cancel := p.hub.Subscribe(0)
	cancel()
	i := slices.IndexFunc(past, func(e Event) bool {
		return e.Kind == EventModeChanged && e.From == proxier.ModeIPVS && strings.Contains(e.Message, "scheduler changed from rr to sed")
	})
	if i < 0 {
		t.Errorf("no mode-changed event for the scheduler: %+v", past)
	}
	if err := l.cs.CoreV1().ConfigMaps(ConfigMapNamespace).Delete(context.Background(), ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The new mode shows in the status (it is the running generation's)
	// just before the settings it came from: wait for both.
	waitFor(t, p, "the defaults again", func() bool {
		st := p.Status()
		return st.Mode == proxier.ModeIPTables && st.ConfigSource == configSourceDefault
	})
}

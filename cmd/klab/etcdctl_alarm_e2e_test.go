package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// TestRealEtcdctlSpaceQuota runs the real etcdctl (klab etcdctl, each
// command its own process) through etcd's documented recovery from a full
// space quota against a 3-member cluster with a 1 MiB quota: puts fail
// with "database space exceeded", alarm list shows NOSPACE, get and del
// still work, then compaction, defrag and alarm disarm let a put through.
func TestRealEtcdctlSpaceQuota(t *testing.T) {
	c := etcdtest.New(t, 3, func(cfg *etcd.Config) {
		cfg.QuotaBackendBytes = 1 << 20
		cfg.SnapshotCount, cfg.SnapshotCatchUp = 50, 5
	})
	t.Setenv("ETCDCTL_ENDPOINTS", "")
	endpoints := "--endpoints=" + strings.Join(c.Endpoints(), ",")
	ctl := func(args ...string) (int, string) {
		t.Helper()
		code, stdout, stderr := klabProcess(t, append([]string{"etcdctl", endpoints}, args...)...)
		return code, stdout + stderr
	}
	run := func(args ...string) string {
		t.Helper()
		code, out := ctl(args...)
		if code != 0 {
			t.Fatalf("etcdctl %s exited %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}

	value := strings.Repeat("v", 64<<10)
	var out string
	filled := false
	for i := 0; i < 40 && !filled; i++ {
		var code int
		code, out = ctl("put", "/fill/"+strconv.Itoa(i), value)
		filled = code != 0
	}
	if !filled || !strings.Contains(out, "etcdserver: mvcc: database space exceeded") {
		t.Fatalf("etcdctl put into a full quota: %q, want etcd's space error", out)
	}
	if out := run("alarm", "list"); !strings.Contains(out, "alarm:NOSPACE") || !strings.HasPrefix(out, "memberID:") {
		t.Fatalf("etcdctl alarm list: %q, want NOSPACE (raised by each member whose database went past the quota)", out)
	}
	// endpoint health asks for the alarms too, and reports each member
	// unhealthy while one is active.
	if code, out := ctl("endpoint", "health"); code == 0 || strings.Count(out, "Active Alarm(s): NOSPACE") != 3 {
		t.Errorf("endpoint health while NOSPACE: exit %d %q", code, out)
	}
	if code, out := ctl("put", "/small", "v"); code == 0 || !strings.Contains(out, "database space exceeded") {
		t.Errorf("small put while NOSPACE: exit %d %q", code, out)
	}
	if out := run("get", "/fill/0", "--keys-only"); !strings.Contains(out, "/fill/0") {
		t.Errorf("get while NOSPACE: %q", out)
	}
	run("del", "/fill/", "--prefix")
	var rev struct {
		Header struct {
			Revision int64 `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal([]byte(run("get", "/", "-w", "json")), &rev); err != nil {
		t.Fatal(err)
	}
	run("compaction", strconv.FormatInt(rev.Header.Revision, 10), "--physical")
	if out := run("defrag"); strings.Count(out, "Finished defragmenting etcd member") != 3 {
		t.Errorf("etcdctl defrag: %q", out)
	}
	run("alarm", "disarm")
	if out := run("alarm", "list"); strings.TrimSpace(out) != "" {
		t.Errorf("alarm list after disarm: %q", out)
	}
	if out := run("endpoint", "health"); strings.Count(out, "is healthy") != 3 {
		t.Errorf("endpoint health after disarm: %q", out)
	}
	if out := run("put", "/small", "v"); strings.TrimSpace(out) != "OK" {
		t.Errorf("put after disarm: %q", out)
	}
}

package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// noSpaceMsg is etcd's text for a write refused by the space quota.
const noSpaceMsg = "etcdserver: mvcc: database space exceeded"

// TestSpaceQuotaAlarm fills a 3-member cluster's small space quota and
// walks the operator's way out, as etcd's documentation tells it: the
// write that does not fit fails with etcd's error and raises NOSPACE; the
// alarm is cluster state, so every member lists it and refuses writes,
// also after a restart; reads, deletes and compaction still work;
// compaction then defragmentation shrink the database; disarming the
// alarm lets writes through again.
//
// The quota is 1 MiB; make bench sets KLAB_QUOTA_BYTES to fill 1 GiB.
func TestSpaceQuotaAlarm(t *testing.T) {
	quota := int64(1 << 20)
	if v := os.Getenv("KLAB_QUOTA_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1<<20 {
			t.Fatalf("KLAB_QUOTA_BYTES=%q: want a number of bytes, at least 1 MiB", v)
		}
		quota = n
	}
	c := etcdtest.New(t, 3, func(cfg *etcd.Config) {
		cfg.QuotaBackendBytes = quota
		// Keep the raft log, which shares the file, short.
		cfg.SnapshotCount, cfg.SnapshotCatchUp = 50, 5
		cfg.CompactRetention = -1
	})
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	// A follower is down while the quota fills: it learns of the alarm
	// as it catches up, from a snapshot (the log is compacted past it by
	// the writes below), not by applying the alarm's entry.
	down := (c.WaitLeader(10*time.Second) + 1) % len(c.Peers)
	c.Kill(down)
	for i := 0; i < 60; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/pre/%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	// About a thousand puts whatever the quota, each at most 1 MiB (a
	// request's limit is 1.5 MiB).
	value := strings.Repeat("x", int(min(max(quota/1024, 16<<10), 1<<20)))
	written := 0
	var fillErr error
	start := time.Now()
	for ; int64(written) < 2*quota/int64(len(value)); written++ {
		if _, fillErr = cli.Put(ctx, fmt.Sprintf("/fill/%04d", written), value); fillErr != nil {
			break
		}
	}
	if fillErr == nil || fillErr.Error() != noSpaceMsg || !errors.Is(fillErr, rpctypes.ErrNoSpace) {
		t.Fatalf("after %d puts of %d bytes into a %d-byte quota: err %v, want %q", written, len(value), quota, fillErr, noSpaceMsg)
	}
	t.Logf("quota of %d bytes reached after %d puts of %d bytes, in %v", quota, written, len(value), time.Since(start).Round(time.Millisecond))

	if err := c.Start(down); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, c, 20*time.Second)
	t.Logf("%s caught up; its latest raft snapshot is at index %d", c.Peers[down].Name, status(c, down).SnapshotIndex)

	// The alarm, listed by every member, from its own applied state.
	wantAlarm := func(when string, want bool) {
		t.Helper()
		for i, ep := range c.Endpoints() {
			one := c.Client(ep)
			al, err := one.AlarmList(ctx)
			if err != nil {
				t.Fatalf("%s: alarm list from %s: %v", when, c.Peers[i].Name, err)
			}
			// Each member whose own database went past the quota raises
			// its own NOSPACE, as in etcd.
			got := len(al.Alarms) > 0
			for _, a := range al.Alarms {
				got = got && a.Alarm == pb.AlarmType_NOSPACE
			}
			if got != want {
				t.Errorf("%s: %s lists alarms %v, want NOSPACE: %v", when, c.Peers[i].Name, al.Alarms, want)
			}
			st, err := one.Status(ctx, ep)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(strings.Join(st.Errors, ";"), "alarm:NOSPACE"); got != want {
				t.Errorf("%s: %s status errors %q, want NOSPACE: %v", when, c.Peers[i].Name, st.Errors, want)
			}
			if st.DbSizeQuota != quota {
				t.Errorf("%s: %s reports a quota of %d, want %d", when, c.Peers[i].Name, st.DbSizeQuota, quota)
			}
		}
	}
	wantAlarm("after the fill", true)

	// Every member refuses what adds data, even a tiny put.
	for i, ep := range c.Endpoints() {
		one := c.Client(ep)
		if _, err := one.Put(ctx, "/small", "v"); err == nil || err.Error() != noSpaceMsg {
			t.Errorf("put through %s while NOSPACE: %v, want %q", c.Peers[i].Name, err, noSpaceMsg)
		}
	}
	if _, err := cli.Grant(ctx, 60); err == nil || err.Error() != noSpaceMsg {
		t.Errorf("lease grant while NOSPACE: %v, want %q", err, noSpaceMsg)
	}
	if _, err := cli.Txn(ctx).Then(clientv3.OpPut("/t", "v")).Commit(); err == nil || err.Error() != noSpaceMsg {
		t.Errorf("txn with a put while NOSPACE: %v, want %q", err, noSpaceMsg)
	}

	// The alarm survives a restart: it is in the member's database.
	c.Kill(1)
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, c, 10*time.Second)
	wantAlarm("after restarting "+c.Peers[1].Name, true)

	// Reads, deletes and compaction work.
	// The put refused at apply time was applied all the same, as etcd
	// does (the members must not diverge on their file sizes): it may be
	// there.
	got, err := cli.Get(ctx, "/fill/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || got.Count < int64(written) || got.Count > int64(written)+1 {
		t.Fatalf("read while NOSPACE: %v, err %v; want %d or %d keys", got, err, written, written+1)
	}
	del, err := cli.Delete(ctx, "/fill/", clientv3.WithPrefix())
	if err != nil || del.Deleted != got.Count {
		t.Fatalf("delete while NOSPACE: %v, %v", del, err)
	}
	if _, err := cli.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact while NOSPACE: %v", err)
	}
	// Compaction frees pages inside the file; defragmentation gives them
	// back, on each member.
	waitConverged(t, c, 10*time.Second)
	for i, ep := range c.Endpoints() {
		before, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Defragment(ctx, ep); err != nil {
			t.Fatalf("defragment %s: %v", c.Peers[i].Name, err)
		}
		after, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: db %d (in use %d) → %d after defragmentation", c.Peers[i].Name, before.DbSize, before.DbSizeInUse, after.DbSize)
		if after.DbSize >= quota*3/4 || after.DbSize >= before.DbSize {
			t.Errorf("%s: db size %d before defragmentation, %d after; want it smaller, and well under the quota %d", c.Peers[i].Name, before.DbSize, after.DbSize, quota)
		}
	}
	// Still capped: only disarming lifts the alarm.
	if _, err := cli.Put(ctx, "/small", "v"); err == nil || err.Error() != noSpaceMsg {
		t.Errorf("put before disarming: %v, want %q", err, noSpaceMsg)
	}

	// etcdctl alarm disarm: list, then deactivate each.
	if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{}); err != nil {
		t.Fatalf("alarm disarm: %v", err)
	}
	wantAlarm("after disarming", false)
	for i, ep := range c.Endpoints() {
		if _, err := c.Client(ep).Put(ctx, "/after", c.Peers[i].Name); err != nil {
			t.Errorf("put through %s after disarming: %v", c.Peers[i].Name, err)
		}
	}
	if _, err := cli.Grant(ctx, 60); err != nil {
		t.Errorf("lease grant after disarming: %v", err)
	}
	waitConverged(t, c, 10*time.Second)
	for i := range c.Peers {
		if kvs := memberKVs(t, c, i, "/after"); len(kvs) != 1 {
			t.Errorf("%s holds %v under /after", c.Peers[i].Name, kvs)
		}
	}
}

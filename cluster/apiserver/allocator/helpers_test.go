package allocator

import (
	"context"
	"encoding/json"
	"math/big"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// testTimeout bounds every test's etcd calls.
const testTimeout = 60 * time.Second

// apiServer returns a new etcd client, as one API server would have, whose
// keys live under a prefix of the test's own: the allocators' keys are
// fixed, and this keeps the subtests that share a member apart. Clients
// made for the same test see the same keys.
func apiServer(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli := c.Client()
	cli.KV = namespace.NewKV(cli.KV, "/"+t.Name())
	return cli
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// errText returns err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkStoredRange reads key straight from etcd and checks that it holds a
// core/v1 RangeAllocation of wantRange, without a stored resourceVersion,
// whose bitmap has only offset onlyBit set, and that snapshot reports the
// key's ModRevision as the resourceVersion.
func checkStoredRange(t *testing.T, cli *clientv3.Client, key, wantRange string, onlyBit int,
	snapshot func(context.Context) (*corev1.RangeAllocation, error)) {
	t.Helper()
	ctx := testContext(t)
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%s: %d keys, want 1", key, len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	obj := &corev1.RangeAllocation{}
	if err := json.Unmarshal(kv.Value, obj); err != nil {
		t.Fatalf("stored value %q is not JSON: %v", kv.Value, err)
	}
	if obj.Kind != "RangeAllocation" || obj.APIVersion != "v1" || obj.Range != wantRange || obj.ResourceVersion != "" {
		t.Errorf("stored object: kind %q, apiVersion %q, range %q, resourceVersion %q; want RangeAllocation, v1, %q, none",
			obj.Kind, obj.APIVersion, obj.Range, obj.ResourceVersion, wantRange)
	}
	if bits := new(big.Int).SetBytes(obj.Data); bits.Bit(onlyBit) != 1 || bits.BitLen() != onlyBit+1 {
		t.Errorf("stored data = %x, want only bit %d set", obj.Data, onlyBit)
	}
	snap, err := snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(kv.ModRevision, 10); snap.ResourceVersion != want {
		t.Errorf("Snapshot().ResourceVersion = %q, want the key's ModRevision %s", snap.ResourceVersion, want)
	}
}

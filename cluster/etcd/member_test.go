package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

func TestThreeMembersReplicate(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/hello", "world"); err != nil {
		t.Fatalf("put: %v", err)
	}
	for _, ep := range c.Endpoints() {
		one := c.Client(ep)
		resp, err := one.Get(ctx, "/hello")
		if err != nil {
			t.Fatalf("get from %s: %v", ep, err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "world" {
			t.Fatalf("get from %s: got %v", ep, resp.Kvs)
		}
	}
}

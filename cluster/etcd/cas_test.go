package etcd_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// TestCASNoLostUpdate runs N goroutines that each increment one counter M
// times with compare-and-swap on the key's mod revision, retrying when the
// compare fails. Every increment must land exactly once: the final value is
// N×M and exactly N×M transactions succeeded. Each goroutine talks to a
// different member, so compares are evaluated on entries that followers
// forwarded to the leader.
func TestCASNoLostUpdate(t *testing.T) {
	tests := []struct {
		name          string
		workers, incs int
		compare       func(key string, kv readKV) clientv3.Cmp
	}{
		{"mod revision", 4, 25, func(k string, kv readKV) clientv3.Cmp {
			return clientv3.Compare(clientv3.ModRevision(k), "=", kv.modRev)
		}},
		{"value", 4, 25, func(k string, kv readKV) clientv3.Cmp {
			return clientv3.Compare(clientv3.Value(k), "=", kv.value)
		}},
	}
	c := etcdtest.New(t, 3, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "/cas/" + tt.name
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := c.Client().Put(ctx, key, "0"); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			succeeded, conflicts := 0, 0
			errs := make(chan error, tt.workers)
			for w := 0; w < tt.workers; w++ {
				cli := c.Client(c.Peers[w%len(c.Peers)].ClientURL)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for done := 0; done < tt.incs; {
						resp, err := cli.Get(ctx, key)
						if err != nil {
							errs <- err
							return
						}
						kv := readKV{value: string(resp.Kvs[0].Value), modRev: resp.Kvs[0].ModRevision}
						n, err := strconv.Atoi(kv.value)
						if err != nil {
							errs <- err
							return
						}
						tr, err := cli.Txn(ctx).If(tt.compare(key, kv)).Then(clientv3.OpPut(key, strconv.Itoa(n+1))).Commit()
						if err != nil {
							// Without faults no transaction should fail; one
							// that did has an unknown outcome and would make
							// the count meaningless.
							errs <- err
							return
						}
						mu.Lock()
						if tr.Succeeded {
							succeeded++
							done++
						} else {
							conflicts++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("worker failed: %v", err)
			}
			resp, err := c.Client().Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.workers * tt.incs
			if got := string(resp.Kvs[0].Value); got != strconv.Itoa(want) || succeeded != want {
				t.Errorf("counter = %s after %d successful transactions, want %d (%d conflicts retried)", got, succeeded, want, conflicts)
			}
			if v := resp.Kvs[0].Version; v != int64(want)+1 {
				t.Errorf("counter version = %d, want %d (one put per increment plus the initial one)", v, want+1)
			}
			t.Logf("%d increments, %d conflicts retried", succeeded, conflicts)
		})
	}
}

// readKV is what a CAS worker read before its transaction.
type readKV struct {
	value  string
	modRev int64
}

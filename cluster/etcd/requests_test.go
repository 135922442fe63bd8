package etcd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// TestRequestStream: a member's /debug/klab/requests reports each client
// request it served, with its method, keys, outcome and whether one of
// klab's components made it: a person's client (clientv3, as etcdctl)
// and a component's (the API server's user agent) are told apart.
func TestRequestStream(t *testing.T) {
	c := etcdtest.New(t, 1, nil)
	c.WaitLeader(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Peers[0].PeerURL+"/debug/klab/requests?quiet=0s", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/klab/requests: %s", resp.Status)
	}
	events := make(chan etcd.RequestEvent, 256)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev etcd.RequestEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Method != "" {
				events <- ev
			}
		}
	}()

	person := c.Client()
	component, err := clientv3.New(clientv3.Config{
		Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithUserAgent(etcd.ComponentUserAgent + "/kube-apiserver")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer component.Close()

	if _, err := component.Put(ctx, "/registry/pods/default/web", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Get(ctx, "/registry/pods/", clientv3.WithPrefix(), clientv3.WithKeysOnly()); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Txn(ctx).If(clientv3.Compare(clientv3.Version("/a"), "=", 0)).Then(clientv3.OpPut("/a", "1"), clientv3.OpPut("/b", "2")).Commit(); err != nil {
		t.Fatal(err)
	}
	// A read at a revision the member has not reached fails, and says
	// so.
	if _, err := person.Get(ctx, "/future", clientv3.WithRev(1<<40)); err == nil {
		t.Fatal("a read at a future revision succeeded")
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	person.Watch(wctx, "/registry/", clientv3.WithPrefix())

	want := []struct {
		method, key, rangeEnd, code string
		component                   bool
		keys                        int
	}{
		{"Put", "/registry/pods/default/web", "", "OK", true, 0},
		{"Range", "/registry/pods/", "/registry/pods0", "OK", false, 0},
		{"Txn", "/a", "", "OK", false, 3},
		{"Range", "/future", "", "", false, 0},
		{"Watch", "/registry/", "/registry0", "OK", false, 0},
	}
	for _, w := range want {
		var ev etcd.RequestEvent
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("stream ended before %s %s", w.method, w.key)
				}
				ev = e
			case <-ctx.Done():
				t.Fatalf("no %s %s on the stream", w.method, w.key)
			}
			// The clients' own calls (MemberList at dial, Status) are
			// on the stream too; the ones this test made come in order.
			if ev.Method == w.method && ev.Key == w.key {
				break
			}
		}
		if ev.Service == "" || ev.Member != c.Peers[0].Name || ev.RangeEnd != w.rangeEnd || ev.Component != w.component || ev.Keys != w.keys {
			t.Errorf("%s %s: got %+v", w.method, w.key, ev)
		}
		if w.code != "" && ev.Code != w.code {
			t.Errorf("%s %s: code %s, want %s", w.method, w.key, ev.Code, w.code)
		}
		if w.code == "" && (ev.Code == "OK" || ev.Error == "") {
			t.Errorf("%s %s failed, but the stream says code %s, error %q", w.method, w.key, ev.Code, ev.Error)
		}
		if !w.component && (ev.UserAgent == "" || ev.Peer == "") {
			t.Errorf("%s %s: no user agent or peer: %+v", w.method, w.key, ev)
		}
	}
}

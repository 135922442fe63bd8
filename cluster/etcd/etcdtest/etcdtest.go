// Package etcdtest runs real klab etcd members in one process for tests and
// benchmarks: each member listens on its own loopback ports and talks to the
// others over real sockets; a shared fault table cuts links between them.
//
// A test that starts a cluster (New, and the API server and controller
// fixtures built on it) is an end-to-end test: under go test -short, New
// skips it, so that -short runs the fast unit tests only.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/fault"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/internal/testenv"
)

// Cluster is a set of members started together.
type Cluster struct {
	t      testing.TB
	Dir    string
	Token  string
	Peers  []etcd.Peer
	Faults *fault.Table
	Tune   func(*etcd.Config)
	// PKI, set by NewTLS, is the members' etcd PKI: they serve clients
	// and peers over TLS and require certificates from its CA.
	PKI     *pki.EtcdPKI
	mu      sync.Mutex
	members []*etcd.Member
	listen  []listenAddrs
}

type listenAddrs struct{ client, peer string }

// FreeAddr returns a loopback address with a port nobody listens on now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// New starts n members and waits for a leader. tune, if not nil, adjusts
// every member's configuration (tick interval, snapshot count, ...).
func New(t testing.TB, n int, tune func(*etcd.Config)) *Cluster {
	t.Helper()
	return newCluster(t, n, tune, false)
}

// NewTLS is New with the members behind TLS as kubeadm runs them: each
// with server and peer certificates from an etcd CA in Dir/pki/etcd, and
// client certificates required on both ports. Client uses the
// health-check client certificate.
func NewTLS(t testing.TB, n int, tune func(*etcd.Config)) *Cluster {
	t.Helper()
	return newCluster(t, n, tune, true)
}

func newCluster(t testing.TB, n int, tune func(*etcd.Config), withTLS bool) *Cluster {
	t.Helper()
	// testing.Short panics outside a test binary (etcdbench runs clusters
	// too).
	if testing.Testing() {
		testenv.EndToEnd(t)
	}
	c := &Cluster{t: t, Dir: t.TempDir(), Faults: fault.NewTable(), Tune: tune}
	if withTLS {
		var members []pki.EtcdMember
		for i := 0; i < n; i++ {
			members = append(members, pki.EtcdMember{Name: fmt.Sprintf("m%d", i+1)})
		}
		var err error
		if c.PKI, err = pki.EnsureEtcd(filepath.Join(c.Dir, "pki"), members); err != nil {
			t.Fatal(err)
		}
	}
	// A port FreeAddr found free may be taken (by another test's outgoing
	// connection, say) before the member listens on it; then the whole
	// cluster starts again on fresh ports, a fresh token and empty data.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := c.startAll(n)
		if err == nil {
			break
		}
		c.Close()
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == attempts {
			t.Fatal(err)
		}
		t.Logf("etcdtest: %v; starting again on other ports", err)
		for _, p := range c.Peers {
			os.RemoveAll(filepath.Join(c.Dir, p.Name))
		}
	}
	t.Cleanup(c.Close)
	c.WaitLeader(10 * time.Second)
	return c
}

// startAll picks addresses for n members and starts them all.
func (c *Cluster) startAll(n int) error {
	c.Token = "etcdtest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c.Peers, c.listen = nil, nil
	for i := 0; i < n; i++ {
		ca, err := FreeAddr()
		if err != nil {
			return err
		}
		pa, err := FreeAddr()
		if err != nil {
			return err
		}
		c.listen = append(c.listen, listenAddrs{client: ca, peer: pa})
		scheme := "http://"
		if c.PKI != nil {
			scheme = "https://"
		}
		c.Peers = append(c.Peers, etcd.Peer{Name: fmt.Sprintf("m%d", i+1), PeerURL: scheme + pa, ClientURL: scheme + ca})
	}
	c.members = make([]*etcd.Member, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = c.Start(i)
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Config returns member i's configuration.
func (c *Cluster) Config(i int) etcd.Config {
	cfg := etcd.Config{
		Name:           c.Peers[i].Name,
		DataDir:        filepath.Join(c.Dir, c.Peers[i].Name),
		ClusterToken:   c.Token,
		InitialCluster: c.Peers,
		ClientListen:   c.listen[i].client,
		PeerListen:     c.listen[i].peer,
		Faults:         c.Faults,
	}
	if c.PKI != nil {
		name := c.Peers[i].Name
		var err error
		if cfg.ClientTLS, err = pki.EtcdServerTLS(c.PKI.CAFile(), c.PKI.MemberFile(name, pki.EtcdServerCertFile), c.PKI.MemberFile(name, pki.EtcdServerKeyFile)); err != nil {
			c.t.Fatal(err)
		}
		if cfg.PeerTLS, err = pki.EtcdServerTLS(c.PKI.CAFile(), c.PKI.MemberFile(name, pki.EtcdPeerCertFile), c.PKI.MemberFile(name, pki.EtcdPeerKeyFile)); err != nil {
			c.t.Fatal(err)
		}
		if cfg.PeerClientTLS, err = pki.EtcdClientTLS(c.PKI.CAFile(), c.PKI.MemberFile(name, pki.EtcdPeerCertFile), c.PKI.MemberFile(name, pki.EtcdPeerKeyFile)); err != nil {
			c.t.Fatal(err)
		}
	}
	if os.Getenv("KLAB_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", c.t.Name())
	}
	if c.Tune != nil {
		c.Tune(&cfg)
	}
	return cfg
}

// Start starts (or restarts, on its existing data) member i.
func (c *Cluster) Start(i int) error {
	m, err := etcd.NewMember(c.Config(i))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.members[i] = m
	c.mu.Unlock()
	return nil
}

// Member returns member i (nil if it is stopped).
func (c *Cluster) Member(i int) *etcd.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i]
}

// Kill stops member i abruptly.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	m := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if m != nil {
		m.Kill()
	}
}

// Close stops every member.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for i := range c.members {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c.Kill(i)
		}(i)
	}
	wg.Wait()
}

// Endpoints returns the client URLs of all members.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.Peers))
	for i, p := range c.Peers {
		eps[i] = p.ClientURL
	}
	return eps
}

// Client returns a clientv3 client for the given endpoints (all if none).
func (c *Cluster) Client(endpoints ...string) *clientv3.Client {
	c.t.Helper()
	if len(endpoints) == 0 {
		endpoints = c.Endpoints()
	}
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if c.PKI != nil {
		var err error
		if cfg.TLS, err = pki.EtcdClientTLS(c.PKI.CAFile(), c.PKI.HealthcheckCertFile(), c.PKI.HealthcheckKeyFile()); err != nil {
			c.t.Fatal(err)
		}
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Leader returns the index of the member that all running members agree
// is the leader of the highest term, or -1.
func (c *Cluster) Leader() int {
	var lead string
	var term uint64
	idx := -1
	for i := range c.Peers {
		m := c.Member(i)
		if m == nil {
			continue
		}
		st := m.Status()
		if st.State == "StateLeader" && st.Term >= term {
			lead, term, idx = st.ID, st.Term, i
		}
	}
	if idx < 0 {
		return -1
	}
	for i := range c.Peers {
		m := c.Member(i)
		if m == nil || c.isCut(i, idx) {
			continue
		}
		st := m.Status()
		if st.Leader != lead || st.Term != term {
			return -1
		}
	}
	return idx
}

func (c *Cluster) isCut(i, j int) bool {
	return i != j && c.Faults.Rule(c.Peers[i].Name, c.Peers[j].Name).Cut
}

// WaitLeader waits until the running members agree on a leader and returns
// its index.
func (c *Cluster) WaitLeader(timeout time.Duration) int {
	c.t.Helper()
	lead := -1
	WaitFor(c.t, timeout, "the members to agree on a leader", func() bool {
		lead = c.Leader()
		return lead >= 0
	})
	return lead
}

// PollInterval is how often WaitFor looks again: the members' state has
// no single event to wait on, so tests poll it briefly.
const PollInterval = 10 * time.Millisecond

// WaitFor polls cond until it holds or timeout passes, then fails the test
// with what it was waiting for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(PollInterval)
	}
}

// Index returns the index of the member with the given name.
func (c *Cluster) Index(name string) int {
	for i, p := range c.Peers {
		if p.Name == name {
			return i
		}
	}
	return -1
}

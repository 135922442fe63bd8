package proxier

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// chiSquare is Pearson's statistic of counts against an even spread over k
// categories.
func chiSquare(counts map[string]int, k, n int) float64 {
	expected := float64(n) / float64(k)
	sum := 0.0
	seen := 0
	for _, c := range counts {
		d := float64(c) - expected
		sum += d * d / expected
		seen++
	}
	// Categories never picked contribute their full expectation.
	sum += float64(k-seen) * expected
	return sum
}

const (
	// chiSquare critical values for 2 degrees of freedom.
	chiSquareP05  = 5.991
	chiSquareP001 = 13.82
)

func TestRoundRobinModesAreExactlyEven(t *testing.T) {
	for _, name := range []string{ModeUserspace, ModeIPVS} {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(threeEndpoints))
			var order []string
			for i := 0; i < 6; i++ {
				e, err := m.Pick(web, podClient, ViaClusterIP, nil)
				if err != nil {
					t.Fatal(err)
				}
				order = append(order, e.IP.String())
			}
			want := "10.244.1.5 10.244.2.5 10.244.3.5 10.244.1.5 10.244.2.5 10.244.3.5"
			if got := strings.Join(order, " "); got != want {
				t.Errorf("round robin order = %s, want %s", got, want)
			}
			counts := countPicks(t, m, 300, podClient, ViaClusterIP, nil)
			for _, e := range threeEndpoints {
				if counts[e.ip] != 100 {
					t.Errorf("%s got %d of 300 connections, want exactly 100 (%v)", e.ip, counts[e.ip], counts)
				}
			}
		})
	}
}

func TestRandomModesAreStatisticallyEven(t *testing.T) {
	const n = 3000
	for _, name := range []string{ModeIPTables, ModeNFTables} {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(threeEndpoints))

			counts := countPicks(t, m, n, podClient, ViaClusterIP, rand.New(rand.NewPCG(1, 2)))
			if x := chiSquare(counts, 3, n); x > chiSquareP05 {
				t.Errorf("seed 1: chi-square %.2f > %.3f (p=0.05, df=2): %v", x, chiSquareP05, counts)
			}
			for seed := uint64(10); seed < 30; seed++ {
				counts := countPicks(t, m, n, podClient, ViaClusterIP, rand.New(rand.NewPCG(seed, seed*7)))
				if len(counts) != 3 {
					t.Errorf("seed %d reached %d endpoints, want 3: %v", seed, len(counts), counts)
				}
				if x := chiSquare(counts, 3, n); x > chiSquareP001 {
					t.Errorf("seed %d: chi-square %.2f > %.2f (p=0.001, df=2): %v", seed, x, chiSquareP001, counts)
				}
			}
		})
	}
}

func TestChiSquareDetectsUnevenSpread(t *testing.T) {
	// The test above is only worth something if a skewed spread fails it.
	if x := chiSquare(map[string]int{"a": 1100, "b": 1000, "c": 900}, 3, 3000); x <= chiSquareP001 {
		t.Errorf("chi-square of a 10%% skew over 3000 picks = %.2f, want above %.2f", x, chiSquareP001)
	}
	if x := chiSquare(map[string]int{"a": 1500, "b": 1500}, 3, 3000); x <= chiSquareP001 {
		t.Errorf("chi-square with one endpoint never picked = %.2f, want above %.2f", x, chiSquareP001)
	}
}

func TestInternalTrafficPolicyLocal(t *testing.T) {
	elsewhere := []ep{{ip: "10.244.2.5", node: "worker-2"}, {ip: "10.244.3.5", node: "worker-3"}}
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(threeEndpoints, withInternalLocal()))
			counts := countPicks(t, m, 60, podClient, ViaClusterIP, rand.New(rand.NewPCG(3, 4)))
			if counts["10.244.1.5"] != 60 {
				t.Errorf("ClusterIP traffic reached %v, want only this node's endpoint 10.244.1.5", counts)
			}

			m.Sync(webSnapshot(elsewhere, withInternalLocal()))
			if _, err := m.Pick(web, podClient, ViaClusterIP, nil); !errors.Is(err, ErrNoLocalEndpoints) {
				t.Errorf("with no endpoint on this node, Pick error = %v, want ErrNoLocalEndpoints", err)
			}
		})
	}
}

func TestExternalTrafficPolicyLocal(t *testing.T) {
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(threeEndpoints, withNodePort(30080), withExternalLocal()))
			counts := countPicks(t, m, 60, outsideClient, ViaNodePort, rand.New(rand.NewPCG(5, 6)))
			if counts["10.244.1.5"] != 60 {
				t.Errorf("NodePort traffic from outside reached %v, want only this node's endpoint", counts)
			}
			// ClusterIP traffic is not subject to the external policy.
			if counts := countPicks(t, m, 300, podClient, ViaClusterIP, rand.New(rand.NewPCG(5, 6))); len(counts) != 3 {
				t.Errorf("ClusterIP traffic reached %v, want all 3 endpoints", counts)
			}
		})
	}
	// iptables and nftables short-circuit pod traffic to a Local NodePort to
	// all endpoints, as if it had gone out to a load balancer and back.
	for _, name := range []string{ModeIPTables, ModeNFTables} {
		t.Run(name+"/short-circuit", func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(threeEndpoints[1:], withNodePort(30080), withExternalLocal()))
			if _, err := m.Pick(web, outsideClient, ViaNodePort, nil); !errors.Is(err, ErrNoLocalEndpoints) {
				t.Errorf("outside client with no local endpoint: error %v, want ErrNoLocalEndpoints", err)
			}
			if counts := countPicks(t, m, 200, podClient, ViaNodePort, rand.New(rand.NewPCG(7, 8))); len(counts) != 2 {
				t.Errorf("pod client reached %v, want both remote endpoints", counts)
			}
			if counts := countPicks(t, m, 200, testNodeIP.String(), ViaNodePort, rand.New(rand.NewPCG(7, 8))); len(counts) != 2 {
				t.Errorf("the node itself reached %v, want both remote endpoints", counts)
			}
		})
	}
}

func TestOnlyUsableEndpointsGetTraffic(t *testing.T) {
	tests := []struct {
		name string
		eps  []ep
		want []string
	}{
		{"not-ready excluded", []ep{{ip: "10.244.1.5", node: testNode}, {ip: "10.244.2.5", node: "worker-2", notReady: true}, {ip: "10.244.3.5", node: "worker-3"}},
			[]string{"10.244.1.5", "10.244.3.5"}},
		{"ready preferred over terminating", []ep{{ip: "10.244.1.5", node: testNode, notReady: true, serving: true, terminating: true}, {ip: "10.244.2.5", node: "worker-2"}},
			[]string{"10.244.2.5"}},
		{"serving terminating when nothing is ready", []ep{{ip: "10.244.1.5", node: testNode, notReady: true, serving: true, terminating: true}, {ip: "10.244.2.5", node: "worker-2", notReady: true, terminating: true}},
			[]string{"10.244.1.5"}},
	}
	for _, tt := range tests {
		for _, name := range ModeNames {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				m := newMode(t, name, newTestClock())
				m.Sync(webSnapshot(tt.eps))
				counts := countPicks(t, m, 120, podClient, ViaClusterIP, rand.New(rand.NewPCG(9, 9)))
				if len(counts) != len(tt.want) {
					t.Errorf("reached %v, want exactly %v", counts, tt.want)
				}
				for _, ip := range tt.want {
					if counts[ip] == 0 {
						t.Errorf("reached %v, want %s among them", counts, ip)
					}
				}
			})
		}
	}
}

func TestNoEndpointsIsRejected(t *testing.T) {
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(nil, withNodePort(30080)))
			for _, via := range []EntryKind{ViaClusterIP, ViaNodePort} {
				if _, err := m.Pick(web, podClient, via, nil); !errors.Is(err, ErrNoEndpoints) {
					t.Errorf("via %s: error %v, want ErrNoEndpoints", via, err)
				}
			}
			if _, err := m.Pick(spn("default", "missing"), podClient, ViaClusterIP, nil); !errors.Is(err, ErrServiceNotFound) {
				t.Errorf("unknown service: error %v, want ErrServiceNotFound", err)
			}
			if _, err := m.Pick(web, "not-an-ip", ViaClusterIP, nil); !errors.Is(err, ErrInvalidClientIP) {
				t.Errorf("bad client IP: error %v, want ErrInvalidClientIP", err)
			}
		})
	}
}

func TestNodePortNeedsANodePort(t *testing.T) {
	for _, name := range ModeNames {
		m := newMode(t, name, newTestClock())
		m.Sync(webSnapshot(threeEndpoints))
		if _, err := m.Pick(web, outsideClient, ViaNodePort, nil); !errors.Is(err, ErrNoNodePort) {
			t.Errorf("%s: error %v, want ErrNoNodePort", name, err)
		}
	}
}

func TestSessionAffinityClientIP(t *testing.T) {
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			clock := newTestClock()
			m := newMode(t, name, clock)
			m.Sync(webSnapshot(threeEndpoints, withAffinity(60)))
			rng := rand.New(rand.NewPCG(11, 12))

			first := map[string]string{}
			for c := 1; c <= 30; c++ {
				client := "10.244.9." + strconv.Itoa(c)
				for i := 0; i < 10; i++ {
					e, err := m.Pick(web, client, ViaClusterIP, rng)
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 {
						first[client] = e.IP.String()
					} else if e.IP.String() != first[client] {
						t.Fatalf("client %s moved from %s to %s within the affinity timeout", client, first[client], e.IP)
					}
					clock.Advance(time.Second)
				}
			}
			distinct := map[string]bool{}
			for _, ip := range first {
				distinct[ip] = true
			}
			if len(distinct) < 2 {
				t.Errorf("30 clients all stuck to %v: affinity must pin each client, not all of them", distinct)
			}

			// Once a client has been idle longer than the timeout it is
			// balanced again.
			seen := map[string]bool{}
			for i := 0; i < 20; i++ {
				clock.Advance(61 * time.Second)
				e, err := m.Pick(web, "10.244.9.1", ViaClusterIP, rng)
				if err != nil {
					t.Fatal(err)
				}
				seen[e.IP.String()] = true
			}
			if len(seen) < 2 {
				t.Errorf("after the timeout, one client always reached %v: affinity did not expire", seen)
			}
		})
	}
}

func TestDeadEndpoint(t *testing.T) {
	// A backend's process is dead but its endpoint is still listed. Only
	// userspace retries another endpoint; the others send some connections
	// to the dead one.
	const dead = "10.244.2.5"
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			m.Sync(webSnapshot(threeEndpoints))
			if m.Retries() != (name == ModeUserspace) {
				t.Errorf("Retries() = %v", m.Retries())
			}
			rng := rand.New(rand.NewPCG(13, 14))
			failures := 0
			for i := 0; i < 300; i++ {
				if us, ok := m.(*Userspace); ok {
					_, err := us.Connect(web, podClient, ViaClusterIP, func(e Endpoint, _ time.Duration) error {
						if e.IP.String() == dead {
							return errors.New("connection refused")
						}
						return nil
					})
					if err != nil {
						failures++
					}
					continue
				}
				e, err := m.Pick(web, podClient, ViaClusterIP, rng)
				if err != nil {
					t.Fatal(err)
				}
				if e.IP.String() == dead {
					failures++
				}
			}
			if name == ModeUserspace && failures != 0 {
				t.Errorf("userspace: %d of 300 connections failed, want 0 (it retries)", failures)
			}
			if name != ModeUserspace && (failures < 50 || failures > 150) {
				t.Errorf("%s: %d of 300 connections reached the dead endpoint, want about 100", name, failures)
			}
		})
	}
}

func TestCleanupLeavesNothing(t *testing.T) {
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			res := m.Sync(webSnapshot(threeEndpoints, withNodePort(30080), withAffinity(60)))
			if res.Rules == 0 {
				t.Fatal("Sync programmed no rules")
			}
			if _, err := m.Pick(web, podClient, ViaClusterIP, nil); err != nil {
				t.Fatal(err)
			}
			m.Cleanup()
			var buf bytes.Buffer
			if err := m.Render(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if name == ModeIPVS {
				if svcs, err := parseIPVSAdm(out); err != nil || len(svcs) != 0 {
					t.Errorf("after Cleanup ipvsadm shows %d virtual services (err %v):\n%s", len(svcs), err, out)
				}
			} else if out != "" {
				t.Errorf("after Cleanup Render still writes:\n%s", out)
			}
			if _, err := m.Pick(web, podClient, ViaClusterIP, nil); !errors.Is(err, ErrServiceNotFound) {
				t.Errorf("after Cleanup Pick error = %v, want ErrServiceNotFound", err)
			}
			switch m := m.(type) {
			case *IPTables:
				if m.nat != nil || m.filter != nil || m.services != nil || len(m.recent) != 0 {
					t.Error("iptables kept tables or affinity lists")
				}
			case *IPVS:
				if len(m.servers) != 0 || len(m.services) != 0 {
					t.Error("ipvs kept virtual services")
				}
			case *NFTables:
				if m.state != nil || len(m.affinity) != 0 {
					t.Error("nftables kept its table or affinity sets")
				}
			case *Userspace:
				if len(m.services) != 0 || m.saved != nil {
					t.Error("userspace kept balancers or portal rules")
				}
			}
		})
	}
}

func TestNewRejectsUnknownModeAndBadConfig(t *testing.T) {
	clock := newTestClock()
	if _, err := New("ebpf", testConfig(clock)); err == nil || !strings.Contains(err.Error(), `"ebpf"`) {
		t.Errorf("New(ebpf) error = %v, want one naming the mode", err)
	}
	if m, err := New("", testConfig(clock)); err != nil || m.Name() != ModeIPTables {
		t.Errorf("New(\"\") = %v, %v; want the iptables default", m, err)
	}
	bad := []Config{
		{},
		{NodeIP: testNodeIP, IPVSScheduler: "wrr2"},
		{NodeIP: testNodeIP, MasqueradeBit: 40},
	}
	for _, cfg := range bad {
		if _, err := New(ModeIPVS, cfg); err == nil {
			t.Errorf("New(ipvs, %+v) accepted a bad config", cfg)
		}
	}
}

// manyServices is n services of 10 endpoints each, spread over 4 nodes.
func manyServices(n int) *Snapshot {
	services := make([]*corev1.Service, 0, n)
	slices := make([]*discoveryv1.EndpointSlice, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("svc-%04d", i)
		var opts []serviceOption
		if i < 2000 { // the NodePort range holds 2768 ports
			opts = append(opts, withNodePort(int32(30000+i)))
		}
		services = append(services, service("bench", name, ipFrom(10<<24|96<<16, i+1), opts...))
		eps := make([]ep, 10)
		for j := range eps {
			eps[j] = ep{ip: ipFrom(10<<24|244<<16, i*10+j+1), node: fmt.Sprintf("worker-%d", 1+j%4)}
		}
		slices = append(slices, slice("bench", name, eps...))
	}
	return BuildSnapshot(testNode, services, slices)
}

// ipFrom returns the IPv4 address base + offset.
func ipFrom(base uint32, offset int) string {
	v := base + uint32(offset)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

func TestPickDuringSync(t *testing.T) {
	// A kube-proxy syncs while connections arrive; run with -race.
	for _, name := range ModeNames {
		t.Run(name, func(t *testing.T) {
			m := newMode(t, name, newTestClock())
			snaps := []*Snapshot{webSnapshot(threeEndpoints, withNodePort(30080)), webSnapshot(threeEndpoints[1:], withNodePort(30080))}
			m.Sync(snaps[0])
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < 50; i++ {
					m.Sync(snaps[i%2])
				}
			}()
			rng := rand.New(rand.NewPCG(1, 2))
			var buf bytes.Buffer
			for i := 0; i < 500; i++ {
				if _, err := m.Pick(web, podClient, EntryKind(i%2), rng); err != nil {
					t.Fatalf("pick %d during sync: %v", i, err)
				}
				if i%100 == 0 {
					buf.Reset()
					if err := m.Render(&buf); err != nil {
						t.Fatal(err)
					}
				}
			}
			<-done
		})
	}
}

package allocator

import (
	"errors"
	"math/big"
	"net"
	"slices"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

func TestNewIPAllocator(t *testing.T) {
	tests := []struct {
		name           string
		cidr           string
		wantCIDR       string
		wantSize, band int
		wantErr        string
	}{
		{name: "default range", cidr: DefaultServiceCIDR, wantCIDR: "10.96.0.0/12", wantSize: 1<<20 - 2, band: 256},
		{name: "host bits are masked", cidr: "10.96.5.7/12", wantCIDR: "10.96.0.0/12", wantSize: 1<<20 - 2, band: 256},
		{name: "a /24", cidr: "192.168.7.0/24", wantCIDR: "192.168.7.0/24", wantSize: 254, band: 16},
		{name: "a /28 has no static band", cidr: "10.0.0.0/28", wantCIDR: "10.0.0.0/28", wantSize: 14, band: 0},
		{name: "a /31 has no usable address", cidr: "10.0.0.0/31", wantCIDR: "10.0.0.0/31", wantSize: 0, band: 0},
		{name: "a /32 has no usable address", cidr: "10.0.0.7/32", wantCIDR: "10.0.0.7/32", wantSize: 0, band: 0},
		{name: "IPv6 is capped at 65536 addresses", cidr: "fd00::/108", wantCIDR: "fd00::/108", wantSize: 65535, band: 256},
		{name: "IPv6 keeps its last address", cidr: "fd00::/120", wantCIDR: "fd00::/120", wantSize: 255, band: 16},
		{name: "IPv4 too large", cidr: "10.0.0.0/11",
			wantErr: "specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12"},
		{name: "IPv6 too large", cidr: "fd00::/107",
			wantErr: "specified --service-cluster-ip-range is too large; for 128-bit addresses, the mask must be >= 108"},
		{name: "not a CIDR", cidr: "10.96.0.0",
			wantErr: `parse service CIDR "10.96.0.0": netip.ParsePrefix("10.96.0.0"): no '/'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewIPAllocator(&clientv3.Client{}, tt.cidr)
			if errText(err) != tt.wantErr {
				t.Fatalf("error = %q, want %q", errText(err), tt.wantErr)
			}
			if err != nil {
				return
			}
			if a.CIDR() != tt.wantCIDR || a.size != tt.wantSize || a.store.cached.staticBand != tt.band {
				t.Errorf("CIDR, size, static band = %s, %d, %d, want %s, %d, %d",
					a.CIDR(), a.size, a.store.cached.staticBand, tt.wantCIDR, tt.wantSize, tt.band)
			}
		})
	}
}

func TestIPAllocatorWithoutClient(t *testing.T) {
	if _, err := NewIPAllocator(nil, DefaultServiceCIDR); err == nil {
		t.Fatal("NewIPAllocator(nil, ...) returned no error")
	}
}

func TestIPAllocator(t *testing.T) {
	c := etcdtest.New(t, 1, nil)

	t.Run("allocations are unique, in range and in the upper band", func(t *testing.T) {
		ctx := testContext(t)
		a := newIPAllocator(t, apiServer(t, c), DefaultServiceCIDR)
		_, cidr, _ := net.ParseCIDR(DefaultServiceCIDR)
		// The static band is the first 256 usable addresses: 10.96.0.1-10.96.1.0.
		lowest, highest := ipNum("10.96.1.1"), ipNum("10.111.255.254")
		seen := map[string]bool{}
		var want []string
		for range 200 {
			ip, err := a.Allocate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := ipNum(ip.String()); !cidr.Contains(ip) || n.Cmp(lowest) < 0 || n.Cmp(highest) > 0 {
				t.Fatalf("allocated %s, want an address in 10.96.1.1-10.111.255.254", ip)
			}
			if seen[ip.String()] {
				t.Fatalf("allocated %s twice", ip)
			}
			seen[ip.String()] = true
			want = append(want, ip.String())
		}
		slices.SortFunc(want, func(x, y string) int { return ipNum(x).Cmp(ipNum(y)) })
		if got := usedIPs(t, a); !slices.Equal(got, want) {
			t.Errorf("Used() = %v, want %v", got, want)
		}
	})

	t.Run("upper band, then static band, then full", func(t *testing.T) {
		ctx := testContext(t)
		// A /27: 30 usable addresses, the first 16 (.1-.16) are the static band.
		a := newIPAllocator(t, apiServer(t, c), "10.0.0.0/27")
		for i := range 30 {
			ip, err := a.Allocate(ctx)
			if err != nil {
				t.Fatalf("allocation %d: %v", i+1, err)
			}
			last := ip.To4()[3]
			if i < 14 && (last < 17 || last > 30) {
				t.Fatalf("allocation %d = %s, want one of 10.0.0.17-10.0.0.30 while they last", i+1, ip)
			}
			if i >= 14 && (last < 1 || last > 16) {
				t.Fatalf("allocation %d = %s, want one of 10.0.0.1-10.0.0.16", i+1, ip)
			}
		}
		_, err := a.Allocate(ctx)
		if !errors.Is(err, ErrFull) || err.Error() != "range is full" {
			t.Fatalf("Allocate() on a full range = %v, want %q", err, "range is full")
		}
		if got := len(usedIPs(t, a)); got != 30 {
			t.Errorf("len(Used()) = %d, want 30", got)
		}
	})

	t.Run("specific addresses", func(t *testing.T) {
		ctx := testContext(t)
		a := newIPAllocator(t, apiServer(t, c), DefaultServiceCIDR)
		notInRange := func(ip string) string {
			return "the provided IP (" + ip + ") is not in the valid range. The range of valid IPs is 10.96.0.0/12"
		}
		steps := []struct {
			name, ip, wantErr string
		}{
			{"free address", "10.96.0.10", ""},
			{"same address again", "10.96.0.10", "provided IP is already allocated"},
			{"address in the static band", "10.96.0.1", ""},
			{"last usable address", "10.111.255.254", ""},
			{"network address", "10.96.0.0", notInRange("10.96.0.0")},
			{"broadcast address", "10.111.255.255", notInRange("10.111.255.255")},
			{"below the range", "10.95.255.255", notInRange("10.95.255.255")},
			{"above the range", "10.112.0.1", notInRange("10.112.0.1")},
			{"IPv6 address", "fd00::1", notInRange("fd00::1")},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				err := a.AllocateSpecific(ctx, net.ParseIP(s.ip))
				if errText(err) != s.wantErr {
					t.Fatalf("AllocateSpecific(%s) = %q, want %q", s.ip, errText(err), s.wantErr)
				}
			})
		}
		var notIn *ErrNotInRange
		if err := a.AllocateSpecific(ctx, net.ParseIP("10.0.0.1")); !errors.As(err, &notIn) || notIn.ValidRange != "10.96.0.0/12" {
			t.Errorf("AllocateSpecific(10.0.0.1) = %v, want an *ErrNotInRange for 10.96.0.0/12", err)
		}
		if err := a.AllocateSpecific(ctx, net.ParseIP("10.96.0.10")); !errors.Is(err, ErrAllocated) {
			t.Errorf("AllocateSpecific(10.96.0.10) = %v, want ErrAllocated", err)
		}
		want := []string{"10.96.0.1", "10.96.0.10", "10.111.255.254"}
		if got := usedIPs(t, a); !slices.Equal(got, want) {
			t.Errorf("Used() = %v, want %v", got, want)
		}
	})

	t.Run("release and reuse", func(t *testing.T) {
		ctx := testContext(t)
		// A /29: 10.0.0.1-10.0.0.6, no static band.
		a := newIPAllocator(t, apiServer(t, c), "10.0.0.0/29")
		for range 6 {
			if _, err := a.Allocate(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Allocate(ctx); !errors.Is(err, ErrFull) {
			t.Fatalf("Allocate() on a full /29 = %v, want ErrFull", err)
		}
		steps := []struct {
			name, ip string
		}{
			{"allocated address", "10.0.0.3"},
			{"already free address", "10.0.0.3"},
			{"address outside the range", "192.168.0.1"},
			{"network address", "10.0.0.0"},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				if err := a.Release(ctx, net.ParseIP(s.ip)); err != nil {
					t.Fatalf("Release(%s) = %v, want nil", s.ip, err)
				}
			})
		}
		ip, err := a.Allocate(ctx)
		if err != nil || ip.String() != "10.0.0.3" {
			t.Fatalf("Allocate() after release = %v, %v, want 10.0.0.3", ip, err)
		}
		want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}
		if got := usedIPs(t, a); !slices.Equal(got, want) {
			t.Errorf("Used() = %v, want %v", got, want)
		}
	})

	t.Run("IPv6", func(t *testing.T) {
		ctx := testContext(t)
		a := newIPAllocator(t, apiServer(t, c), "fd00::/120")
		steps := []struct {
			name, ip, wantErr string
		}{
			{"last address is usable", "fd00::ff", ""},
			{"network address", "fd00::", "the provided IP (fd00::) is not in the valid range. The range of valid IPs is fd00::/120"},
			{"IPv4 address", "10.96.0.1", "the provided IP (10.96.0.1) is not in the valid range. The range of valid IPs is fd00::/120"},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				if err := a.AllocateSpecific(ctx, net.ParseIP(s.ip)); errText(err) != s.wantErr {
					t.Fatalf("AllocateSpecific(%s) = %q, want %q", s.ip, errText(err), s.wantErr)
				}
			})
		}
		ip, err := a.Allocate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Offsets 0-15 (fd00::1-fd00::10) are the static band.
		if n := ipNum(ip.String()); n.Cmp(ipNum("fd00::11")) < 0 || n.Cmp(ipNum("fd00::fe")) > 0 {
			t.Errorf("Allocate() = %s, want one of fd00::11-fd00::fe", ip)
		}
	})

	t.Run("another API server's changes are seen", func(t *testing.T) {
		ctx := testContext(t)
		first := newIPAllocator(t, apiServer(t, c), DefaultServiceCIDR)
		second := newIPAllocator(t, apiServer(t, c), DefaultServiceCIDR)
		ip := net.ParseIP("10.96.0.50")
		steps := []struct {
			name    string
			do      func() error
			wantErr error
		}{
			{"first allocates", func() error { return first.AllocateSpecific(ctx, ip) }, nil},
			{"second cannot allocate it too", func() error { return second.AllocateSpecific(ctx, ip) }, ErrAllocated},
			{"second releases it", func() error { return second.Release(ctx, ip) }, nil},
			{"first allocates it again", func() error { return first.AllocateSpecific(ctx, ip) }, nil},
			{"second still cannot", func() error { return second.AllocateSpecific(ctx, ip) }, ErrAllocated},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				if err := s.do(); !errors.Is(err, s.wantErr) {
					t.Fatalf("got %v, want %v", err, s.wantErr)
				}
			})
		}
	})

	t.Run("concurrent creates on two API servers get distinct addresses", func(t *testing.T) {
		ctx := testContext(t)
		// 50 addresses out of a /24's 238 dynamic ones: random picks alone
		// would collide almost surely.
		servers := []*IPAllocator{
			newIPAllocator(t, apiServer(t, c), "10.0.0.0/24"),
			newIPAllocator(t, apiServer(t, c), "10.0.0.0/24"),
		}
		const creates = 50
		ips := make([]string, creates)
		errs := make([]error, creates)
		var wg sync.WaitGroup
		for i := range creates {
			wg.Go(func() {
				ip, err := servers[i%2].Allocate(ctx)
				ips[i], errs[i] = ip.String(), err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		distinct := slices.Clone(ips)
		slices.SortFunc(distinct, func(x, y string) int { return ipNum(x).Cmp(ipNum(y)) })
		distinct = slices.Compact(distinct)
		if len(distinct) != creates {
			t.Fatalf("%d creates got %d distinct addresses: %v", creates, len(distinct), ips)
		}
		if got := usedIPs(t, newIPAllocator(t, apiServer(t, c), "10.0.0.0/24")); !slices.Equal(got, distinct) {
			t.Errorf("Used() = %v, want %v", got, distinct)
		}
	})

	t.Run("the key holds a RangeAllocation", func(t *testing.T) {
		ctx := testContext(t)
		cli := apiServer(t, c)
		a := newIPAllocator(t, cli, DefaultServiceCIDR)
		if obj, err := a.Snapshot(ctx); err != nil || obj.ResourceVersion != "" || obj.Range != "10.96.0.0/12" || len(obj.Data) != 0 {
			t.Fatalf("Snapshot() before any allocation = %+v, %v, want an empty 10.96.0.0/12 range without a resourceVersion", obj, err)
		}
		// 10.96.0.10 is offset 9.
		if err := a.AllocateSpecific(ctx, net.ParseIP("10.96.0.10")); err != nil {
			t.Fatal(err)
		}
		checkStoredRange(t, cli, "/registry/ranges/serviceips", "10.96.0.0/12", 9, a.Snapshot)
	})

	t.Run("a different range in etcd is refused", func(t *testing.T) {
		ctx := testContext(t)
		if _, err := newIPAllocator(t, apiServer(t, c), DefaultServiceCIDR).Allocate(ctx); err != nil {
			t.Fatal(err)
		}
		other := newIPAllocator(t, apiServer(t, c), "10.96.0.0/16")
		if _, err := other.Allocate(ctx); !errors.Is(err, ErrMismatchedNetwork) {
			t.Errorf("Allocate() = %v, want ErrMismatchedNetwork", err)
		}
		if _, err := other.Used(ctx); !errors.Is(err, ErrMismatchedNetwork) {
			t.Errorf("Used() = %v, want ErrMismatchedNetwork", err)
		}
	})
}

func newIPAllocator(t *testing.T, cli *clientv3.Client, cidr string) *IPAllocator {
	t.Helper()
	a, err := NewIPAllocator(cli, cidr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func usedIPs(t *testing.T, a *IPAllocator) []string {
	t.Helper()
	ips, err := a.Used(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

// ipNum returns ip as a number, for comparing addresses.
func ipNum(ip string) *big.Int {
	parsed := net.ParseIP(ip)
	if v4 := parsed.To4(); v4 != nil {
		parsed = v4
	}
	return new(big.Int).SetBytes(parsed)
}

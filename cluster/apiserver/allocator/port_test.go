package allocator

import (
	"errors"
	"slices"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

func TestNewPortAllocator(t *testing.T) {
	tests := []struct {
		name       string
		base, size int
		wantRange  string
		wantBand   int
		wantErr    string
	}{
		{name: "default range", base: DefaultNodePortBase, size: DefaultNodePortSize, wantRange: "30000-32767", wantBand: 86},
		{name: "small range has no band", base: 31000, size: 10, wantRange: "31000-31009", wantBand: 0},
		{name: "up to the last port", base: 65535, size: 1, wantRange: "65535-65535", wantBand: 0},
		{name: "port zero", base: 0, size: 10, wantErr: "invalid NodePort range: base 0, size 10: the ports must lie in 1-65535"},
		{name: "empty range", base: 30000, size: 0, wantErr: "invalid NodePort range: base 30000, size 0: the ports must lie in 1-65535"},
		{name: "past the last port", base: 65000, size: 537, wantErr: "invalid NodePort range: base 65000, size 537: the ports must lie in 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewPortAllocator(&clientv3.Client{}, tt.base, tt.size)
			if errText(err) != tt.wantErr {
				t.Fatalf("error = %q, want %q", errText(err), tt.wantErr)
			}
			if err != nil {
				return
			}
			if a.Range() != tt.wantRange || a.store.cached.staticBand != tt.wantBand {
				t.Errorf("range, static band = %s, %d, want %s, %d", a.Range(), a.store.cached.staticBand, tt.wantRange, tt.wantBand)
			}
		})
	}
}

func TestPortAllocator(t *testing.T) {
	c := etcdtest.New(t, 1, nil)

	t.Run("allocations are unique, in range and in the upper band", func(t *testing.T) {
		ctx := testContext(t)
		a := newPortAllocator(t, apiServer(t, c), DefaultNodePortBase, DefaultNodePortSize)
		// The static band is the first 86 ports: 30000-30085.
		seen := map[int]bool{}
		var want []int
		for range 200 {
			port, err := a.Allocate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if port < 30086 || port > 32767 {
				t.Fatalf("allocated %d, want a port in 30086-32767", port)
			}
			if seen[port] {
				t.Fatalf("allocated %d twice", port)
			}
			seen[port] = true
			want = append(want, port)
		}
		slices.Sort(want)
		if got := usedPorts(t, a); !slices.Equal(got, want) {
			t.Errorf("Used() = %v, want %v", got, want)
		}
	})

	t.Run("specific ports", func(t *testing.T) {
		ctx := testContext(t)
		a := newPortAllocator(t, apiServer(t, c), DefaultNodePortBase, DefaultNodePortSize)
		const notInRange = "provided port is not in the valid range. The range of valid ports is 30000-32767"
		steps := []struct {
			name    string
			port    int
			wantErr string
		}{
			{"first port", 30000, ""},
			{"same port again", 30000, "provided port is already allocated"},
			{"last port", 32767, ""},
			{"below the range", 29999, notInRange},
			{"above the range", 32768, notInRange},
			{"port zero", 0, notInRange},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				if err := a.AllocateSpecific(ctx, s.port); errText(err) != s.wantErr {
					t.Fatalf("AllocateSpecific(%d) = %q, want %q", s.port, errText(err), s.wantErr)
				}
			})
		}
		var notIn *ErrPortNotInRange
		if err := a.AllocateSpecific(ctx, 80); !errors.As(err, &notIn) || notIn.ValidPorts != "30000-32767" {
			t.Errorf("AllocateSpecific(80) = %v, want an *ErrPortNotInRange for 30000-32767", err)
		}
		if err := a.AllocateSpecific(ctx, 32767); !errors.Is(err, ErrPortAllocated) {
			t.Errorf("AllocateSpecific(32767) = %v, want ErrPortAllocated", err)
		}
		if got, want := usedPorts(t, a), []int{30000, 32767}; !slices.Equal(got, want) {
			t.Errorf("Used() = %v, want %v", got, want)
		}
	})

	t.Run("upper band, static band, full, release and reuse", func(t *testing.T) {
		ctx := testContext(t)
		// 40 ports; the first 16 (31000-31015) are the static band.
		a := newPortAllocator(t, apiServer(t, c), 31000, 40)
		for i := range 40 {
			port, err := a.Allocate(ctx)
			if err != nil {
				t.Fatalf("allocation %d: %v", i+1, err)
			}
			if i < 24 && (port < 31016 || port > 31039) {
				t.Fatalf("allocation %d = %d, want one of 31016-31039 while they last", i+1, port)
			}
			if i >= 24 && (port < 31000 || port > 31015) {
				t.Fatalf("allocation %d = %d, want one of 31000-31015", i+1, port)
			}
		}
		if _, err := a.Allocate(ctx); !errors.Is(err, ErrFull) || err.Error() != "range is full" {
			t.Fatalf("Allocate() on a full range = %v, want %q", err, "range is full")
		}
		steps := []struct {
			name string
			port int
		}{
			{"allocated port", 31020},
			{"already free port", 31020},
			{"port outside the range", 30000},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				if err := a.Release(ctx, s.port); err != nil {
					t.Fatalf("Release(%d) = %v, want nil", s.port, err)
				}
			})
		}
		if port, err := a.Allocate(ctx); err != nil || port != 31020 {
			t.Fatalf("Allocate() after release = %d, %v, want 31020", port, err)
		}
		if got := len(usedPorts(t, a)); got != 40 {
			t.Errorf("len(Used()) = %d, want 40", got)
		}
	})

	t.Run("concurrent creates on two API servers get distinct ports", func(t *testing.T) {
		ctx := testContext(t)
		servers := []*PortAllocator{
			newPortAllocator(t, apiServer(t, c), 30000, 100),
			newPortAllocator(t, apiServer(t, c), 30000, 100),
		}
		const creates = 50
		ports := make([]int, creates)
		errs := make([]error, creates)
		var wg sync.WaitGroup
		for i := range creates {
			wg.Go(func() {
				ports[i], errs[i] = servers[i%2].Allocate(ctx)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		distinct := slices.Compact(slices.Sorted(slices.Values(ports)))
		if len(distinct) != creates {
			t.Fatalf("%d creates got %d distinct ports: %v", creates, len(distinct), ports)
		}
		if got := usedPorts(t, newPortAllocator(t, apiServer(t, c), 30000, 100)); !slices.Equal(got, distinct) {
			t.Errorf("Used() = %v, want %v", got, distinct)
		}
	})

	t.Run("the key holds a RangeAllocation", func(t *testing.T) {
		ctx := testContext(t)
		cli := apiServer(t, c)
		a := newPortAllocator(t, cli, DefaultNodePortBase, DefaultNodePortSize)
		if err := a.AllocateSpecific(ctx, 30003); err != nil {
			t.Fatal(err)
		}
		checkStoredRange(t, cli, "/registry/ranges/servicenodeports", "30000-32767", 3, a.Snapshot)
	})

	t.Run("a different range in etcd is refused", func(t *testing.T) {
		ctx := testContext(t)
		if _, err := newPortAllocator(t, apiServer(t, c), DefaultNodePortBase, DefaultNodePortSize).Allocate(ctx); err != nil {
			t.Fatal(err)
		}
		other := newPortAllocator(t, apiServer(t, c), 30000, 1000)
		err := other.AllocateSpecific(ctx, 30001)
		if !errors.Is(err, ErrMismatchedPortRange) {
			t.Errorf("AllocateSpecific() = %v, want ErrMismatchedPortRange", err)
		}
	})
}

func newPortAllocator(t *testing.T, cli *clientv3.Client, base, size int) *PortAllocator {
	t.Helper()
	a, err := NewPortAllocator(cli, base, size)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func usedPorts(t *testing.T, a *PortAllocator) []int {
	t.Helper()
	ports, err := a.Used(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

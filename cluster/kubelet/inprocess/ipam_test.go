package inprocess

import (
	"errors"
	"strings"
	"testing"
)

// newTestPool is a pool whose addresses are all bindable except those in
// unusable.
func newTestPool(t *testing.T, cidr string, unusable ...string) *ipPool {
	t.Helper()
	p, err := newIPPool(cidr)
	if err != nil {
		t.Fatal(err)
	}
	p.bindable = func(ip string) error {
		for _, u := range unusable {
			if ip == u {
				return errors.New("cannot assign requested address")
			}
		}
		return nil
	}
	return p
}

func allocateN(t *testing.T, p *ipPool, n int) []string {
	t.Helper()
	var ips []string
	for range n {
		ip, err := p.allocate()
		if err != nil {
			t.Fatalf("allocate after %v: %v", ips, err)
		}
		ips = append(ips, ip)
	}
	return ips
}

func TestIPPoolOrder(t *testing.T) {
	tests := []struct {
		name     string
		cidr     string
		unusable []string
		n        int
		want     string
	}{
		{name: "skips network and gateway", cidr: "127.250.7.0/24", n: 3, want: "127.250.7.2 127.250.7.3 127.250.7.4"},
		{name: "masks host bits", cidr: "127.250.7.9/24", n: 1, want: "127.250.7.2"},
		{name: "skips unbindable", cidr: "127.250.7.0/24", unusable: []string{"127.250.7.3"}, n: 2, want: "127.250.7.2 127.250.7.4"},
		{name: "a /29 has five", cidr: "127.250.7.8/29", n: 5, want: "127.250.7.10 127.250.7.11 127.250.7.12 127.250.7.13 127.250.7.14"},
		{name: "wider than a /24", cidr: "127.250.0.0/23", n: 1, want: "127.250.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPool(t, tt.cidr, tt.unusable...)
			if got := strings.Join(allocateN(t, p, tt.n), " "); got != tt.want {
				t.Errorf("allocated %s, want %s", got, tt.want)
			}
		})
	}
}

func TestIPPoolReusesReleasedLast(t *testing.T) {
	p := newTestPool(t, "127.250.7.8/29") // .10 to .14
	ips := allocateN(t, p, 3)             // .10 .11 .12
	p.release(ips[0])
	p.release(ips[1])
	got := allocateN(t, p, 4)
	want := []string{"127.250.7.13", "127.250.7.14", "127.250.7.10", "127.250.7.11"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("allocated %v, want %v: released addresses come last", got, want)
	}
	if _, err := p.allocate(); err == nil || !strings.Contains(err.Error(), "all 5 are in use") {
		t.Errorf("allocate from a full pool: %v", err)
	}
	p.release("10.0.0.1") // not ours: ignored
	p.release("garbage")
	if _, err := p.allocate(); err == nil {
		t.Error("releasing a foreign address freed one")
	}
}

func TestIPPoolNoneBindable(t *testing.T) {
	p := newTestPool(t, "127.250.7.8/29", "127.250.7.10", "127.250.7.11", "127.250.7.12", "127.250.7.13", "127.250.7.14")
	_, err := p.allocate()
	if err == nil || !strings.Contains(err.Error(), "no usable IP") || !strings.Contains(err.Error(), "cannot assign requested address") {
		t.Errorf("allocate = %v, want it to say why no address is usable", err)
	}
}

func TestNewIPPoolRejects(t *testing.T) {
	tests := []struct{ cidr, want string }{
		{"", "parse pod CIDR"},
		{"127.250.7.0", "parse pod CIDR"},
		{"fd00::/64", "only IPv4"},
		{"127.250.7.0/30", "too small"},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			if _, err := newIPPool(tt.cidr); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("newIPPool(%q) = %v, want %q", tt.cidr, err, tt.want)
			}
		})
	}
}

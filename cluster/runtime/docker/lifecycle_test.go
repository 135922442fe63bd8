package docker

import (
	"errors"
	"net"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/klab-dev/klab/cluster/runtime"
)

// listen starts a listener that handles each connection with handle.
func listen(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return l.Addr().String()
}

func TestServing(t *testing.T) {
	// A server waits for its client to speak, holding the connection.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	server := listen(t, func(c net.Conn) { <-hold; c.Close() })
	// A server that greets at once.
	greeter := listen(t, func(c net.Conn) { c.Write([]byte("220 hello\r\n")); <-hold; c.Close() })
	// What Docker's userland proxy does when nothing listens in the
	// container: accept, then close.
	proxy := listen(t, func(c net.Conn) { c.Close() })
	// A port nobody listens on.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()

	tests := []struct {
		name string
		addr string
		want bool
	}{
		{"server", server, true},
		{"greeting server", greeter, true},
		{"proxy with no backend", proxy, false},
		{"closed port", closed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serving(tt.addr); got != tt.want {
				t.Errorf("serving(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	tests := []struct {
		name      string
		state     container.State
		want      runtime.State
		wantError string
	}{
		{"created", container.State{Status: container.StateCreated}, runtime.StateCreated, ""},
		{"running", container.State{Status: container.StateRunning, Running: true}, runtime.StateRunning, ""},
		{"paused", container.State{Status: container.StatePaused, Running: true, Paused: true}, runtime.StatePaused, ""},
		{"stopped", container.State{Status: container.StateExited, ExitCode: 0}, runtime.StateStopped, ""},
		{"killed", container.State{Status: container.StateExited, ExitCode: 137}, runtime.StateKilled, ""},
		{"crashed", container.State{Status: container.StateExited, ExitCode: 1}, runtime.StateExited, ""},
		{"failed to start", container.State{Status: container.StateExited, ExitCode: 127, Error: "exec: no such file"}, runtime.StateExited, "exec: no such file"},
		{"out of memory", container.State{Status: container.StateExited, ExitCode: 137, OOMKilled: true}, runtime.StateExited, "killed by the kernel: out of memory"},
		{"dead", container.State{Status: container.StateDead, ExitCode: 2}, runtime.StateExited, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := stateOf(&tt.state)
			if got != tt.want || msg != tt.wantError {
				t.Errorf("stateOf = %s, %q; want %s, %q", got, msg, tt.want, tt.wantError)
			}
		})
	}
}

func TestCheckPartition(t *testing.T) {
	nodes := map[string]container.Summary{"master-1": {}, "master-2": {}, "master-3": {}, "lb": {}}
	tests := []struct {
		name    string
		a, b    []string
		wantErr error  // matched with errors.Is when set
		wantMsg string // else a substring of the error; "" = no error
	}{
		{"whole cluster", []string{"master-1"}, []string{"master-2", "master-3", "lb"}, nil, ""},
		{"leaves a node out", []string{"master-1"}, []string{"master-2", "master-3"}, ErrPartialPartition, ""},
		{"unknown node", []string{"master-9"}, []string{"master-1", "master-2", "master-3", "lb"}, runtime.ErrNotFound, ""},
		{"node on both sides", []string{"master-1"}, []string{"master-1", "master-2", "master-3", "lb"}, nil, "both sides"},
		{"empty side", nil, []string{"master-1", "master-2", "master-3", "lb"}, nil, "at least one node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPartition(nodes, tt.a, tt.b)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error = %v, want one wrapping %v", err, tt.wantErr)
				}
			case tt.wantMsg == "":
				if err != nil {
					t.Errorf("error = %v", err)
				}
			case err == nil || !contains(err.Error(), tt.wantMsg):
				t.Errorf("error = %v, want one containing %q", err, tt.wantMsg)
			}
		})
	}
}

func TestMemoryUsed(t *testing.T) {
	tests := []struct {
		name string
		m    container.MemoryStats
		want int64
	}{
		{"cgroup v1", container.MemoryStats{Usage: 1000, Stats: map[string]uint64{"total_inactive_file": 300, "inactive_file": 1}}, 700},
		{"cgroup v2", container.MemoryStats{Usage: 1000, Stats: map[string]uint64{"inactive_file": 400}}, 600},
		{"no breakdown", container.MemoryStats{Usage: 1000}, 1000},
		{"cache above usage", container.MemoryStats{Usage: 10, Stats: map[string]uint64{"inactive_file": 400}}, 0},
	}
	for _, tt := range tests {
		if got := memoryUsed(tt.m); got != tt.want {
			t.Errorf("%s: memoryUsed = %d, want %d", tt.name, got, tt.want)
		}
	}
}

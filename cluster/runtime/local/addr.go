package local

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	goruntime "runtime"
	"strconv"
	"syscall"

	"github.com/klab-dev/klab/cluster/runtime"
)

// Node addresses. On Linux the whole 127.0.0.0/8 block reaches the loopback
// interface without configuration, so every node gets an address of its own
// and its components can listen on their upstream ports (2379, 2380, ...),
// as they would on a real machine. Each cluster gets its own /24 inside the
// block, derived from its name, so that two clusters never share a node
// address: otherwise a port that a stopped member of one cluster left free
// could be taken by a member of the other before the first restarts. In a
// cluster's /24, master-N is .(10+N), worker-N is .(100+N) and the load
// balancer is .2. Should two
// names hash to the same /24, their nodes still get ports of their own,
// each chosen free when the cluster is created. Other systems route only
// 127.0.0.1 by default, so there every node shares it and only ports differ.
const (
	// lbHost is the load balancer's node, .2 in the cluster's /24.
	lbHost         = 2
	masterHostBase = 10
	workerHostBase = 100
	// MaxMasters and MaxWorkers bound the node indexes that have an address
	// of their own.
	MaxMasters = workerHostBase - masterHostBase - 1
	MaxWorkers = 254 - workerHostBase
)

// clusterNet returns the second and third bytes of a cluster's loopback
// /24: 127.A.B.0 with A from 1 to 254, so never the 127.0.0.0/24 that other
// programs on the machine use.
func clusterNet(cluster string) (a, b int) {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	sum := h.Sum32()
	return 1 + int(sum%254), int((sum >> 8) % 256)
}

// NodeHost returns the loopback address of a node of the named cluster.
func NodeHost(cluster, role string, index int) (string, error) {
	if goruntime.GOOS != "linux" {
		return "127.0.0.1", nil
	}
	a, b := clusterNet(cluster)
	prefix := "127." + strconv.Itoa(a) + "." + strconv.Itoa(b) + "."
	switch {
	case role == runtime.RoleMaster && index >= 1 && index <= MaxMasters:
		return prefix + strconv.Itoa(masterHostBase+index), nil
	case role == runtime.RoleWorker && index >= 1 && index <= MaxWorkers:
		return prefix + strconv.Itoa(workerHostBase+index), nil
	case role == runtime.RoleLB && index == 1:
		return prefix + strconv.Itoa(lbHost), nil
	}
	return "", fmt.Errorf("no loopback address for %s node %d", role, index)
}

// allocatePorts grants every requested port on host: the default one when it
// is free, any free one otherwise. The probe listeners stay open until all
// ports are chosen so that one node never gets the same port twice; the ports
// are free again when it returns, for the components to bind.
func allocatePorts(host string, ports []runtime.Port) (map[string]int, error) {
	granted := make(map[string]int, len(ports))
	var probes []net.Listener
	defer func() {
		for _, l := range probes {
			l.Close()
		}
	}()
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p.Default)))
		if err != nil {
			l, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
		}
		if err != nil {
			return nil, fmt.Errorf("find a free port for %s on %s: %w", p.Name, host, err)
		}
		probes = append(probes, l)
		granted[p.Name] = l.Addr().(*net.TCPAddr).Port
	}
	return granted, nil
}

// checkPortsFree verifies that a reused node's ports can be bound again.
func checkPortsFree(host string, ports map[string]int) error {
	for name, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("port %d (%s) on %s is in use by another program: %w", port, name, host, err)
			}
			return fmt.Errorf("listen on %s port %d (%s): %w", host, port, name, err)
		}
		l.Close()
	}
	return nil
}

// PodCIDR returns the loopback /24 a node's pods get their IPs from in
// the local runtime: a pod is a server on its own address, as it would be
// in its own network namespace. The /24 derives from the cluster and node
// names, away from the cluster's node /24. Other systems than Linux route
// only 127.0.0.1, where pods cannot have addresses of their own: there the
// answer is an error.
func PodCIDR(cluster, node string) (string, error) {
	if goruntime.GOOS != "linux" {
		return "", errors.New("pods need an address each, which only Linux's loopback offers; use --runtime docker")
	}
	na, nb := clusterNet(cluster)
	h := fnv.New32a()
	h.Write([]byte(cluster + "/" + node))
	sum := h.Sum32()
	for {
		a, b := 1+int(sum%254), int((sum>>8)%256)
		if a != na || b != nb {
			return fmt.Sprintf("127.%d.%d.0/24", a, b), nil
		}
		sum = sum*16777619 + 1
	}
}

package controller

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/internal/componentbase/apiclient"
	"github.com/klab-dev/klab/cluster/timing"
)

// clientDefaults are upstream's user agent, with client rates for a REST
// config that sets none: the controllers of a manager share one client,
// and client-go's defaults (5 QPS, burst 10) would make them queue behind
// each other.
var clientDefaults = apiclient.Defaults{UserAgent: componentName, QPS: 500, Burst: 1000}

// Config configures a Manager.
type Config struct {
	// REST reaches the API server as system:kube-controller-manager.
	REST *rest.Config
	// Identity is the name of the master the manager runs on; the lease
	// holder identity is "<Identity>_<uuid>".
	Identity string
	// Speed divides Kubernetes' timings.
	Speed timing.Speed
	// DebugListen is the plain HTTP address of the debug server
	// ("127.0.0.1:0" picks a port; empty means that).
	DebugListen string
	// Logger receives the manager's and the controllers' logs.
	Logger *slog.Logger
	// Controllers selects controllers as upstream's --controllers flag
	// does: "name" enables one, "-name" disables one, "*" enables every
	// one not named otherwise. Nil means all of them.
	Controllers []string
	// Workers is the number of workers of every controller; 0 means each
	// controller's upstream default.
	Workers int
	// ClusterSigningCert and ClusterSigningKey are the CA the CSR signer
	// issues with; nil leaves it off.
	ClusterSigningCert *x509.Certificate
	ClusterSigningKey  crypto.Signer
	// RootCA is the CA bundle published as kube-root-ca.crt in every
	// namespace; empty leaves the publisher off.
	RootCA []byte
}

// knownControllers returns the names of the registered controllers,
// sorted.
func knownControllers() []string {
	names := make([]string, 0, len(initFuncs))
	for name := range initFuncs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// enabledControllers resolves the --controllers list against the
// registered controllers, in name order. A name that is not registered is
// an error, as upstream's flag validation says.
func enabledControllers(selection []string) ([]string, error) {
	known := knownControllers()
	if selection == nil {
		return known, nil
	}
	var errs []error
	for _, s := range selection {
		name := strings.TrimPrefix(s, "-")
		if s == "*" {
			continue
		}
		if _, ok := initFuncs[name]; !ok {
			errs = append(errs, fmt.Errorf("%q is not in the list of known controllers", s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var enabled []string
	for _, name := range known {
		if isControllerEnabled(name, selection) {
			enabled = append(enabled, name)
		}
	}
	return enabled, nil
}

// isControllerEnabled applies upstream's rule: the first entry naming the
// controller decides; otherwise "*" enables it.
func isControllerEnabled(name string, selection []string) bool {
	star := false
	for _, s := range selection {
		switch s {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			star = true
		}
	}
	return star
}

// workersFor is how many workers the controller gets.
func (c Config) workersFor(name string) int {
	if c.Workers > 0 {
		return c.Workers
	}
	if n, ok := concurrentSyncs[name]; ok {
		return n
	}
	return defaultConcurrentSyncs
}

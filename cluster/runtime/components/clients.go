package components

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/cluster/scheduler/plugins"
	"github.com/klab-dev/klab/cluster/timing"
)

// restConfig is a client component's configuration for reaching the API
// server as user, with the client certificate of its own credentials
// directory (spec.PKIDir), trusting the cluster's CA, dialling with dial
// (the default dialer when nil). It returns the loaded credentials too,
// for components that also serve or sign. Credentials of another user
// than the component's are an error rather than a surprise at the first
// 403.
func restConfig(spec runtime.ClientSpec, user string, dial DialFunc) (*rest.Config, *pki.ComponentCredentials, error) {
	creds, err := pki.LoadComponentCredentials(spec.PKIDir)
	if err != nil {
		return nil, nil, err
	}
	if got := creds.User(); got != user {
		return nil, nil, fmt.Errorf("the credentials in %s are user %q's, not %q's", spec.PKIDir, got, user)
	}
	cfg, err := creds.RESTConfig(spec.APIServer)
	if err != nil {
		return nil, nil, err
	}
	if dial != nil {
		cfg.Dial = dial
	}
	return cfg, creds, nil
}

// Scheduler starts a kube-scheduler as system:kube-scheduler with the
// default plugin profile. identity names it in leader election (the
// master's node name). It returns once its debug endpoint listens; it
// campaigns for the lease in the background.
func Scheduler(ctx context.Context, identity string, spec runtime.SchedulerSpec, dial DialFunc, logger *slog.Logger) (Process, error) {
	cfg, _, err := restConfig(spec.ClientSpec, auth.KubeScheduler, dial)
	if err != nil {
		return nil, err
	}
	s, err := scheduler.New(scheduler.Config{
		REST: cfg, Identity: identity, Profile: plugins.Default(), Speed: timing.Speed(spec.Speed),
		DebugListen: spec.DebugListen, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ControllerManager starts a kube-controller-manager as
// system:kube-controller-manager. identity names it in leader election (the
// master's node name). It returns once its debug endpoint listens; it
// campaigns for the lease in the background.
func ControllerManager(ctx context.Context, identity string, spec runtime.ControllerManagerSpec, dial DialFunc, logger *slog.Logger) (Process, error) {
	cfg, p, err := restConfig(spec.ClientSpec, auth.KubeControllerManager, dial)
	if err != nil {
		return nil, err
	}
	// The CSR signer issues with the cluster CA, as kubeadm points
	// --cluster-signing-cert-file and --cluster-signing-key-file at it; a
	// PKI directory without ca.key leaves the signer off.
	caKey, _ := p.CAKey()
	m, err := controller.New(controller.Config{
		REST: cfg, Identity: identity, Speed: timing.Speed(spec.Speed), DebugListen: spec.DebugListen, Logger: logger,
		ClusterSigningCert: p.CACert, ClusterSigningKey: caKey, RootCA: p.CAPEM,
	})
	if err != nil {
		return nil, err
	}
	if err := m.Start(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

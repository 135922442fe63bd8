package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdctl/v3/ctlv3"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// endpointsEnv is how etcdctl takes --endpoints from the environment (its
// flags all map to ETCDCTL_<FLAG>). A flag given on the command line wins,
// and etcdctl refuses to run when both are set, so klab only presets the
// variable when the user has given neither.
const endpointsEnv = "ETCDCTL_ENDPOINTS"

func newEtcdctlCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "etcdctl [--name <cluster>] <etcdctl arguments>",
		Short: i18n.T("etcdctl.short"),
		Long:  i18n.T("etcdctl.long"),
		// Everything after `etcdctl` belongs to etcdctl, --help included.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, args := takeNameFlag(args)
			// An empty ETCDCTL_ENDPOINTS means nothing, but etcdctl still
			// counts it as set and refuses --endpoints next to it.
			if v, ok := os.LookupEnv(endpointsEnv); ok && v == "" {
				os.Unsetenv(endpointsEnv)
			}
			if err := lab.ValidateName(name); err != nil {
				return err
			}
			args, err := nameMoveLeader(cmd.Context(), name, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			endpoints, err := etcdctlEndpoints(cmd.Context(), name, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if endpoints != "" {
				if err := os.Setenv(endpointsEnv, endpoints); err != nil {
					return err
				}
			}
			if err := presetEtcdctlCredentials(name, args); err != nil {
				return err
			}
			// etcdctl's root command reads os.Args, as its own main does.
			os.Args = append([]string{"etcdctl"}, args...)
			if err := ctlv3.Start(); err != nil {
				// etcdctl has printed the error already.
				return exitError{code: 1}
			}
			return nil
		},
	}
}

// exitError ends klab with a code and no further message, for commands
// (etcdctl) that report their own errors.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// takeNameFlag removes klab's --name from etcdctl's arguments (etcdctl has
// no flag of that name) and returns the cluster it names.
func takeNameFlag(args []string) (string, []string) {
	name := lab.DefaultClusterName()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return name, append(out, args[i:]...)
		case a == "--name" && i+1 < len(args):
			name = args[i+1]
			i++
		case strings.HasPrefix(a, "--name="):
			name = strings.TrimPrefix(a, "--name=")
		default:
			out = append(out, a)
		}
	}
	return name, out
}

// etcdctlEndpoints returns the endpoints to preset for etcdctl, or "" when
// the user chose their own. `snapshot save` needs exactly one endpoint;
// klab points it at the leader, whose copy is the most recent.
func etcdctlEndpoints(ctx context.Context, name string, args []string, stderr io.Writer) (string, error) {
	if os.Getenv(endpointsEnv) != "" || hasEndpointsFlag(args) {
		return "", nil
	}
	info, err := lab.LoadInfo(name)
	if err != nil {
		return "", err
	}
	if !isSnapshotSave(args) {
		return strings.Join(info.EtcdEndpoints, ","), nil
	}
	st, err := lab.Status(ctx, name)
	if err != nil {
		return "", err
	}
	for _, m := range st.Members {
		if m.Name == st.Leader {
			fmt.Fprintln(stderr, i18n.T("etcdctl.snapshot-from", m.Name, m.ClientURL))
			return m.ClientURL, nil
		}
	}
	for _, m := range st.Members {
		if m.Error == "" {
			fmt.Fprintln(stderr, i18n.T("etcdctl.snapshot-no-leader", m.Name, m.ClientURL))
			return m.ClientURL, nil
		}
	}
	return "", i18n.NewError("status.err.no-answer", name, nameHint(name))
}

// presetEtcdctlCredentials passes klab's etcd client certificate to
// etcdctl (ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY), each unless the
// user gave that one as a flag or in the environment: the members require a
// certificate from the etcd CA, and `klab status` shows the same files for
// the CKA's `etcdctl --cacert=... --cert=... --key=...` form.
func presetEtcdctlCredentials(name string, args []string) error {
	info, err := lab.LoadInfo(name)
	if err != nil {
		if hasEndpointsFlag(args) || os.Getenv(endpointsEnv) != "" {
			// The user named the endpoints: etcdctl goes to them with the
			// user's own flags, cluster or not (a member started alone
			// with klab component etcd, say).
			return nil
		}
		return err
	}
	for _, c := range []struct{ flag, path string }{
		{"--cacert", info.EtcdCredentials.CACert},
		{"--cert", info.EtcdCredentials.ClientCert},
		{"--key", info.EtcdCredentials.ClientKey},
	} {
		env := "ETCDCTL_" + strings.ToUpper(strings.TrimPrefix(c.flag, "--"))
		if c.path == "" || os.Getenv(env) != "" || hasFlag(args, c.flag) {
			continue
		}
		if err := os.Setenv(env, c.path); err != nil {
			return err
		}
	}
	return nil
}

// hasEndpointsFlag reports whether the user gave etcdctl its endpoints,
// directly or through DNS discovery.
func hasEndpointsFlag(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, f := range []string{"--endpoints", "--discovery-srv", "-d"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
	}
	return false
}

// isSnapshotSave reports whether the arguments run `snapshot save`.
func isSnapshotSave(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "snapshot" {
			for _, b := range args[i+1:] {
				if !strings.HasPrefix(b, "-") {
					return b == "save"
				}
			}
		}
	}
	return false
}

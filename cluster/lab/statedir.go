package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/atomicfile"
)

// Files in a cluster's state dir.
const (
	// InfoFile describes a cluster that became ready: its spec and where its
	// components answer. Other processes (klab status, klab etcdctl, the TUI)
	// find the cluster through it.
	InfoFile = "cluster.json"
	// ControlSocket is the unix socket of the `klab up` process that runs
	// the cluster.
	ControlSocket = "control.sock"
	// infoVersion is the version of cluster.json's layout.
	infoVersion = 1
)

// Home returns klab's state directory: $KLAB_HOME, else
// $XDG_STATE_HOME/klab, else ~/.local/state/klab.
func Home() (string, error) {
	if h := os.Getenv("KLAB_HOME"); h != "" {
		return filepath.Abs(h)
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "klab"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", i18n.Wrap(err, "lab.err.no-home")
	}
	return filepath.Join(home, ".local", "state", "klab"), nil
}

// StateDir returns the state dir of the named cluster, after checking the
// name (a name is a path element here, so a bad one must never get this far).
func StateDir(name string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	home, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, name), nil
}

// Info is the content of cluster.json.
type Info struct {
	Version int  `json:"version"`
	Spec    Spec `json:"spec"`
	// Name repeats Spec.Name and Runtime is the runtime that actually runs
	// the cluster (never "auto"), for readers that only want those.
	Name      string    `json:"name"`
	Runtime   string    `json:"runtime"`
	CreatedAt time.Time `json:"createdAt"`
	// EtcdEndpoints are the members' client URLs, as etcdctl's --endpoints
	// takes them.
	EtcdEndpoints []string `json:"etcdEndpoints"`
	// EtcdCredentials are the files to reach them with (etcdCACert,
	// etcdClientCert, etcdClientKey); empty for a plain-HTTP etcd.
	EtcdCredentials
	Members []MemberInfo   `json:"members"`
	Nodes   []runtime.Node `json:"nodes"`
	// ClusterToken is etcd's initial-cluster-token.
	ClusterToken string `json:"clusterToken"`
	// APIServer is the URL clients use (the load balancer's when there are
	// several masters); APIServers are each master's own; Kubeconfig is
	// the admin kubeconfig's path.
	APIServer  string        `json:"apiServer,omitempty"`
	APIServers []string      `json:"apiServers,omitempty"`
	Kubeconfig string        `json:"kubeconfig,omitempty"`
	LB         *runtime.Node `json:"lb,omitempty"`
}

// MemberInfo says where one etcd member answers.
type MemberInfo struct {
	// Name is the member's name, which is its node's name.
	Name string `json:"name"`
	// ID is the member ID in hex, as etcdctl prints it.
	ID        string `json:"id"`
	PeerURL   string `json:"peerURL"`
	ClientURL string `json:"clientURL"`
	// DebugURL is the base of the member's /debug/klab endpoints.
	DebugURL string `json:"debugURL"`
	// etcd are the credentials to reach the member with: Info's, which
	// readInfo copies here.
	etcd EtcdCredentials
}

// Ref returns the member's component ref.
func (m MemberInfo) Ref() runtime.Ref {
	return runtime.Ref{Node: m.Name, Component: runtime.ComponentEtcd}
}

// LoadInfo reads the named cluster's cluster.json. It fails with an error
// matching ErrNotFound when the cluster has never become ready.
func LoadInfo(name string) (*Info, error) {
	dir, err := StateDir(name)
	if err != nil {
		return nil, err
	}
	info, err := readInfo(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, i18n.NewError("lab.err.not-found", name, dir)
	}
	return info, err
}

func readInfo(dir string) (*Info, error) {
	path := filepath.Join(dir, InfoFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, i18n.Wrap(err, "lab.err.info-corrupt", path)
	}
	if info.Version != infoVersion {
		return nil, i18n.NewError("lab.err.info-version", path, info.Version, infoVersion)
	}
	for i := range info.Members {
		info.Members[i].etcd = info.EtcdCredentials
	}
	return &info, nil
}

func writeInfo(dir string, info *Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", InfoFile, err)
	}
	return atomicfile.Write(filepath.Join(dir, InfoFile), append(data, '\n'), 0o600)
}

package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/klab-dev/klab/cluster/apiserver/allocator"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Paths inside component containers.
const (
	// pkiInContainer is where a component finds the cluster's PKI.
	pkiInContainer = "/etc/klab/pki"
	// dataInContainer is where an etcd member's volume is mounted, and
	// etcdDataDir its data dir inside.
	dataInContainer = "/var/lib/klab"
	etcdDataDir     = dataInContainer + "/etcd"
	// socketInContainer is where a kubelet finds the engine's socket.
	socketInContainer = "/var/run/docker.sock"
)

// Environment of a kubelet's container, which its Docker CRI reads to make
// pods on the cluster's network.
const (
	EnvCluster    = "KLAB_CLUSTER"
	EnvNode       = "KLAB_NODE"
	EnvNetwork    = "KLAB_DOCKER_NETWORK"
	EnvPodCIDR    = "KLAB_POD_CIDR"
	EnvPauseImage = "KLAB_PAUSE_IMAGE"
	EnvNodeIP     = "KLAB_NODE_IP"
	EnvServiceIPs = "KLAB_SERVICE_CIDR"
)

// serviceCIDR is the Service range the API server hands ClusterIPs from.
// Pods route it to their node, whose kube-proxy holds it as local
// addresses and binds each ClusterIP:port (CAP_NET_ADMIN, never
// --privileged).
const serviceCIDR = allocator.DefaultServiceCIDR

// CreateComponent creates the component's container, joined to its node's
// network namespace, without starting it. The container runs `klab
// component <name> --node <node> --spec <json>` with the JSON of its spec,
// and is labelled with the port it serves on, which Start waits for. A container of the same name, left by
// an earlier run (`klab start` creates every component again), is replaced;
// an etcd member's data is on a volume and stays.
//
// What belongs to the runtime is filled in: an etcd member's data dir is on
// the node's etcd volume, the PKI directory is copied into the container at
// /etc/klab/pki (copied rather than mounted, so that it works when the
// engine runs in a VM), and a kubelet's pod range is its node's.
func (r *Runtime) CreateComponent(ctx context.Context, spec runtime.ComponentSpec) error {
	if err := r.needImage(); err != nil {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}
	if spec.Ref.Component == "" || labels.SanitizeName(spec.Ref.Component) != spec.Ref.Component {
		return fmt.Errorf("create component %s: a component name may hold letters, digits, '_', '.' and '-' only", spec.Ref)
	}
	node, err := r.nodeContainer(ctx, spec.Ref.Node)
	if err != nil {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}
	n, err := r.network(ctx, false)
	if err != nil {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}
	nodeCIDR := ""
	if index, ok := nodeIndexAt(n.x, node.Labels[labels.Role], node.Labels[labels.IP]); ok {
		nodeCIDR = podCIDR(n.x, node.Labels[labels.Role], index)
	}
	run, err := commandFor(spec, nodeCIDR, serviceCIDR)
	if err != nil {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}
	port, err := spec.ServePort()
	if err != nil {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}

	name := labels.ComponentContainer(r.opts.Cluster, spec.Ref.Node, spec.Ref.Component)
	if old, err := r.componentContainer(ctx, spec.Ref); err == nil {
		r.opts.Logger.Debug("replacing the component's container", "component", spec.Ref, "container", name)
		if err := r.removeContainer(ctx, old.ID); err != nil {
			return fmt.Errorf("create component %s: remove the old container: %w", spec.Ref, err)
		}
	} else if !isNotFound(err) {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}

	// Docker's on-failure policy restarts a container that exits with an
	// error; a container killed or stopped on purpose stays down.
	policy := container.RestartPolicy{Name: container.RestartPolicyDisabled}
	if spec.RestartsOnFailure() {
		policy = container.RestartPolicy{Name: container.RestartPolicyOnFailure}
	}
	hostCfg := &container.HostConfig{
		NetworkMode:   container.NetworkMode("container:" + node.ID),
		RestartPolicy: policy,
	}
	cfg := &container.Config{
		Image: r.opts.Image,
		Cmd:   run.cmd,
		Labels: map[string]string{
			labels.Cluster:   r.opts.Cluster,
			labels.Role:      labels.RoleComponent,
			labels.Node:      spec.Ref.Node,
			labels.Component: spec.Ref.Component,
			labels.StandBy:   "1",
		},
	}
	if port != 0 {
		cfg.Labels[labels.ServePort] = strconv.Itoa(port)
	}
	switch {
	case spec.Etcd != nil:
		vol := labels.EtcdVolume(r.opts.Cluster, spec.Ref.Node)
		if _, err := r.cli.VolumeCreate(ctx, volume.CreateOptions{Name: vol, Labels: map[string]string{
			labels.Cluster: r.opts.Cluster, labels.Role: labels.RoleVolume, labels.Node: spec.Ref.Node,
		}}); err != nil {
			return fmt.Errorf("create component %s: create volume %s: %w", spec.Ref, vol, err)
		}
		hostCfg.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: dataInContainer}}
	case spec.Kubelet != nil:
		// The kubelet alone gets the engine's socket: it makes its
		// pods' containers.
		hostCfg.Mounts = []mount.Mount{{Type: mount.TypeBind, Source: engineSocket(r.cli), Target: socketInContainer}}
		kubeletVol, err := r.kubeletVolume(ctx, spec.Ref.Node)
		if err != nil {
			return fmt.Errorf("create component %s: %w", spec.Ref, err)
		}
		hostCfg.Mounts = append(hostCfg.Mounts, kubeletVol)
		cfg.Env = []string{
			EnvKubeletVolume + "=" + kubeletVol.Source,
			EnvKubeletDir + "=" + kubeletDirInContainer,
			EnvCluster + "=" + r.opts.Cluster,
			EnvNode + "=" + spec.Ref.Node,
			EnvNetwork + "=" + n.name,
			EnvPodCIDR + "=" + nodeCIDR,
			EnvPauseImage + "=" + r.opts.Image,
			EnvNodeIP + "=" + node.Labels[labels.IP],
			EnvServiceIPs + "=" + serviceCIDR,
		}
	case spec.KubeProxy != nil:
		// To make the Service range local to the node's namespace.
		hostCfg.CapAdd = []string{"NET_ADMIN"}
	}

	resp, err := r.cli.ContainerCreate(ctx, cfg, hostCfg, nil, nil, name)
	if err != nil {
		return fmt.Errorf("create component %s: create container %s: %w", spec.Ref, name, err)
	}
	if err := r.copyEtcdFiles(ctx, resp.ID, run.etcdFiles); err != nil {
		if rmErr := r.removeContainer(ctx, resp.ID); rmErr != nil {
			r.opts.Logger.Warn("remove a half-made component container", "component", spec.Ref, "err", rmErr)
		}
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}
	if run.pkiDir != "" {
		if err := r.copyPKI(ctx, resp.ID, run.pkiDir, run.withCAKey); err != nil {
			if rmErr := r.removeContainer(ctx, resp.ID); rmErr != nil {
				r.opts.Logger.Warn("remove a half-made component container", "component", spec.Ref, "err", rmErr)
			}
			return fmt.Errorf("create component %s: %w", spec.Ref, err)
		}
	}
	r.opts.Logger.Debug("component created", "component", spec.Ref, "container", name)
	return nil
}

// componentRun is what a component's container runs, and the host PKI dir
// to copy into it ("" for none).
type componentRun struct {
	cmd    []string
	pkiDir string
	// withCAKey gives the component the CA's key too: only the
	// controller manager signs (its CSR signer), as kubeadm gives
	// kube-controller-manager ca.key for --cluster-signing-key-file.
	withCAKey bool
	// etcdFiles are the etcd certificates to copy in (container path →
	// host path): a member's own, or an API server's etcd client pair.
	etcdFiles map[string]string
}

// commandFor returns the command of the component spec describes, `klab
// component <name> --node <node> --spec <json>`, with the runtime's paths
// in place of the host's.
func commandFor(spec runtime.ComponentSpec, nodeCIDR, serviceCIDR string) (componentRun, error) {
	if err := spec.Validate(); err != nil {
		return componentRun{}, err
	}
	var (
		name      string
		v         any
		pki       string
		etcdFiles map[string]string
	)
	switch {
	case spec.Etcd != nil:
		s := *spec.Etcd
		s.DataDir = etcdDataDir
		etcdFiles = etcdMemberFiles(&s)
		name, v = runtime.ComponentEtcd, s
	case spec.APIServer != nil:
		s := *spec.APIServer
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		etcdFiles = apiServerEtcdFiles(&s)
		name, v = runtime.ComponentAPIServer, s
	case spec.LB != nil:
		s := *spec.LB
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		name, v = runtime.ComponentLB, s
	case spec.Scheduler != nil:
		s := *spec.Scheduler
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		name, v = runtime.ComponentScheduler, s
	case spec.ControllerManager != nil:
		s := *spec.ControllerManager
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		name, v = runtime.ComponentControllerManager, s
	case spec.Kubelet != nil:
		s := *spec.Kubelet
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		if nodeCIDR != "" {
			s.PodCIDR = nodeCIDR
		}
		s.RootDir = kubeletDirInContainer
		name, v = runtime.ComponentKubelet, s
	case spec.KubeProxy != nil:
		s := *spec.KubeProxy
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		if nodeCIDR != "" {
			s.PodCIDR = nodeCIDR
		}
		s.ServiceCIDR = serviceCIDR
		name, v = runtime.ComponentKubeProxy, s
	case spec.DNS != nil:
		s := *spec.DNS
		pki, s.PKIDir = s.PKIDir, pkiInContainer
		name, v = runtime.ComponentDNS, s
	}
	// An etcd member is the API server's store, not its client: it alone
	// needs no PKI.
	if pki == "" && spec.Etcd == nil {
		return componentRun{}, fmt.Errorf("the spec names no PKI directory")
	}
	data, err := json.Marshal(v)
	if err != nil {
		return componentRun{}, fmt.Errorf("encode the %s spec: %w", name, err)
	}
	return componentRun{cmd: []string{name, "--node", spec.Ref.Node, "--spec", string(data)}, pkiDir: pki,
		withCAKey: spec.ControllerManager != nil, etcdFiles: etcdFiles}, nil
}

// copyPKI copies the files of the host's PKI directory into a created
// container at pkiInContainer. The CA's private key stays on the host
// unless withCAKey: components verify with the CA, and only the
// controller manager's CSR signer signs.
func (r *Runtime) copyPKI(ctx context.Context, id, dir string, withCAKey bool) error {
	archive, err := pkiArchive(dir, withCAKey)
	if err != nil {
		return err
	}
	if err := r.cli.CopyToContainer(ctx, id, "/", archive, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy the PKI into the container: %w", err)
	}
	return nil
}

// pkiArchive returns a tar of dir's regular files under pkiInContainer,
// with the directories leading to it (the image has none); ca.key only
// when withCAKey.
func pkiArchive(dir string, withCAKey bool) (*bytes.Buffer, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the PKI directory: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	parent := ""
	for _, part := range []string{"etc", "klab", "pki"} {
		parent = path.Join(parent, part)
		if err := tw.WriteHeader(&tar.Header{Name: parent + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: contextTime}); err != nil {
			return nil, err
		}
	}
	files := 0
	for _, e := range entries {
		if e.Name() == pki.CAKeyFile && !withCAKey {
			continue
		}
		// Stat follows symlinks, so a linked file is copied as a file.
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read the PKI directory: %w", err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read the PKI directory: %w", err)
		}
		if err := tw.WriteHeader(&tar.Header{
			Name: path.Join(parent, e.Name()), Typeflag: tar.TypeReg, Mode: int64(info.Mode().Perm() & fs.ModePerm),
			Size: int64(len(data)), ModTime: info.ModTime(),
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
		files++
	}
	if files == 0 {
		return nil, fmt.Errorf("the PKI directory %s holds no files", dir)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

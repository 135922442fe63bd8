package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// ListClusters returns the names of the clusters that have containers,
// networks or volumes in the engine, sorted.
func ListClusters(ctx context.Context) ([]string, error) {
	cli, err := newClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	byLabel := filters.NewArgs(filters.Arg("label", labels.Cluster))
	names := map[string]bool{}
	containers, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: byLabel})
	if err != nil {
		return nil, fmt.Errorf("list klab containers: %w", err)
	}
	for _, c := range containers {
		names[c.Labels[labels.Cluster]] = true
	}
	networks, err := cli.NetworkList(ctx, network.ListOptions{Filters: byLabel})
	if err != nil {
		return nil, fmt.Errorf("list klab networks: %w", err)
	}
	for _, n := range networks {
		names[n.Labels[labels.Cluster]] = true
	}
	volumes, err := cli.VolumeList(ctx, volume.ListOptions{Filters: byLabel})
	if err != nil {
		return nil, fmt.Errorf("list klab volumes: %w", err)
	}
	for _, v := range volumes.Volumes {
		names[v.Labels[labels.Cluster]] = true
	}
	delete(names, "")
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// RunningContainers counts the cluster's containers that are running: its
// nodes, components and pods. A cluster whose count is zero was stopped
// (klab stop, or the engine restarted) or never finished starting.
func RunningContainers(ctx context.Context, cluster string) (int, error) {
	cli, err := newClient()
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	f := filters.NewArgs(filters.Arg("label", labels.Cluster+"="+cluster), filters.Arg("status", "running"))
	containers, err := cli.ContainerList(ctx, container.ListOptions{Filters: f})
	if err != nil {
		return 0, fmt.Errorf("list containers of cluster %s: %w", cluster, err)
	}
	return len(containers), nil
}

// RemoveCluster deletes every container, volume and network labelled with
// the cluster's name: the runtime's nodes and components, and the pods and
// sandboxes kubelets made. It works on whatever is left, a whole cluster or
// the remains of a half-made one, and removing what is gone is no error.
func RemoveCluster(ctx context.Context, cluster string, logger *slog.Logger) error {
	if cluster == "" {
		return errors.New("remove cluster: no cluster name")
	}
	cli, err := newClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	return removeCluster(ctx, cli, cluster, componentbase.Logger(logger))
}

// removalRounds bounds how often removeCluster lists the containers again:
// a kubelet may have created a pod's container just before it was removed.
const removalRounds = 5

// removeParallelism bounds how many containers are removed at once; each
// removal waits for its container's processes to die.
const removeParallelism = 4

func removeCluster(ctx context.Context, cli *client.Client, cluster string, logger *slog.Logger) error {
	byCluster := filters.NewArgs(filters.Arg("label", labels.ClusterFilter(cluster)))
	for round := 1; ; round++ {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: byCluster})
		if err != nil {
			return fmt.Errorf("remove cluster %s: list containers: %w", cluster, err)
		}
		if len(list) == 0 {
			break
		}
		if round > removalRounds {
			return fmt.Errorf("remove cluster %s: containers keep appearing (%s, ...); is a kubelet of it still running elsewhere?", cluster, containerName(list[0]))
		}
		if err := removeContainers(ctx, cli, list, logger); err != nil {
			return fmt.Errorf("remove cluster %s: %w", cluster, err)
		}
	}

	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: byCluster})
	if err != nil {
		return fmt.Errorf("remove cluster %s: list volumes: %w", cluster, err)
	}
	for _, v := range vols.Volumes {
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !notFound(err) {
			return fmt.Errorf("remove cluster %s: remove volume %s: %w", cluster, v.Name, err)
		}
		logger.Debug("volume removed", "volume", v.Name)
	}

	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: byCluster})
	if err != nil {
		return fmt.Errorf("remove cluster %s: list networks: %w", cluster, err)
	}
	for _, n := range nets {
		if err := removeNetwork(ctx, cli, n.ID, n.Name, logger); err != nil {
			return fmt.Errorf("remove cluster %s: %w", cluster, err)
		}
	}
	return nil
}

// removalStage orders removals: what creates containers (the kubelets,
// with the other components) first, then pods and their sandboxes, and the
// nodes, whose network namespace the others share, last.
func removalStage(role string) int {
	switch {
	case role == labels.RoleComponent:
		return 0
	case role == labels.RolePod:
		return 1
	case role == labels.RoleSandbox:
		return 2
	case isNodeRole(role):
		return 3
	}
	return 2
}

// removeContainers force-removes the listed containers, stage by stage,
// a few at a time within a stage.
func removeContainers(ctx context.Context, cli *client.Client, list []container.Summary, logger *slog.Logger) error {
	stages := map[int][]container.Summary{}
	for _, c := range list {
		s := removalStage(c.Labels[labels.Role])
		stages[s] = append(stages[s], c)
	}
	for s := 0; s <= 3; s++ {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		slots := make(chan struct{}, removeParallelism)
		for _, c := range stages[s] {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
				if err != nil && !notFound(err) && !removalInProgress(err) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("remove container %s: %w", containerName(c), err))
					mu.Unlock()
					return
				}
				logger.Debug("container removed", "container", containerName(c))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// removalInProgress reports whether a removal failed only because another
// one of the same container is under way (two `klab down` at once).
func removalInProgress(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already in progress")
}

// removeNetwork disconnects whatever is still attached to a network (a
// container someone attached by hand) and removes it.
func removeNetwork(ctx context.Context, cli *client.Client, id, name string, logger *slog.Logger) error {
	inspect, err := cli.NetworkInspect(ctx, id, network.InspectOptions{})
	if notFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect network %s: %w", name, err)
	}
	for cid := range inspect.Containers {
		if err := cli.NetworkDisconnect(ctx, id, cid, true); err != nil && !notFound(err) {
			return fmt.Errorf("disconnect container %.12s from network %s: %w", cid, name, err)
		}
	}
	if err := cli.NetworkRemove(ctx, id); err != nil && !notFound(err) {
		return fmt.Errorf("remove network %s: %w", name, err)
	}
	logger.Debug("network removed", "network", name)
	return nil
}

// RemoveImages removes every image klab built (labelled io.klab.role=image),
// so that the next EnsureImage builds from nothing: what a cold start
// measures. Images a container still uses are left alone and named in the
// error.
func RemoveImages(ctx context.Context) error {
	cli, err := newClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labels.Filter(labels.Role, labels.RoleImage)))})
	if err != nil {
		return fmt.Errorf("list klab images: %w", err)
	}
	var errs []error
	for _, img := range list {
		if _, err := cli.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s %v: %w", img.ID, img.RepoTags, err))
		}
	}
	return errors.Join(errs...)
}

// PruneOptions says which of klab's images PruneImages removes.
type PruneOptions struct {
	// Keep is the build whose images stay: the running binary's.
	Keep string
	// Labels narrow the images considered to those carrying all of them
	// (tests use a label of their own); nil means every klab image.
	Labels map[string]string
}

// PruneResult says what PruneImages did.
type PruneResult struct {
	// Removed names the images removed, by tag or, untagged, by short ID.
	Removed []string
	// InUse names the images kept because a container, running or
	// stopped, was made from them: a cluster stopped with klab stop still
	// needs its build's images to start again.
	InUse []string
	// Bytes is the space the removed images took.
	Bytes int64
}

// PruneImages removes klab's images (io.klab.role=image) of every build
// but opts.Keep. Images that containers still use are kept and listed, not
// forced: the engine refuses to remove them, and that refusal is the
// answer.
func PruneImages(ctx context.Context, opts PruneOptions) (PruneResult, error) {
	cli, err := newClient()
	if err != nil {
		return PruneResult{}, err
	}
	defer cli.Close()
	if err := ping(ctx, cli); err != nil {
		return PruneResult{}, err
	}
	args := filters.NewArgs(filters.Arg("label", labels.Filter(labels.Role, labels.RoleImage)))
	for k, v := range opts.Labels {
		args.Add("label", labels.Filter(k, v))
	}
	// Top-level images only: their untagged parents (build steps) go
	// with them, and a parent listed on its own would be refused for its
	// child, misreported as in use.
	list, err := cli.ImageList(ctx, image.ListOptions{Filters: args})
	if err != nil {
		return PruneResult{}, fmt.Errorf("list klab images: %w", err)
	}
	var (
		res  PruneResult
		errs []error
	)
	for _, img := range list {
		if img.Labels[labels.BuildID] == opts.Keep {
			continue
		}
		name := imageName(img)
		_, err := cli.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
		switch {
		case err == nil:
			res.Removed = append(res.Removed, name)
			res.Bytes += img.Size
		case notFound(err):
			// Removed with a parent, or by someone else meanwhile.
		case cerrdefs.IsConflict(err):
			res.InUse = append(res.InUse, name)
		default:
			errs = append(errs, fmt.Errorf("remove image %s: %w", name, err))
		}
	}
	return res, errors.Join(errs...)
}

// imageName names an image for people: its first tag, else its short ID.
func imageName(img image.Summary) string {
	for _, t := range img.RepoTags {
		if t != "<none>:<none>" {
			return t
		}
	}
	id := strings.TrimPrefix(img.ID, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// RemoveImage removes one image by reference, for instance one a pod
// pulled; an image that is gone is no error.
func RemoveImage(ctx context.Context, ref string) error {
	cli, err := newClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

package dockercri

import (
	"fmt"
	"slices"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/strslice"

	"github.com/klab-dev/klab/cluster/app/standin"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// standIn makes config run klab's stand-in for the image the pod asked
// for, from the workload image: the app serving a welcome page on port
// 80 for a web server image, or the pod's command line for a shell
// image, which finds sh, sleep and the other tools as links in the
// image's /bin. The labels keep the image the pod asked for.
func (r *Runtime) standIn(config *container.Config, cfg cri.ContainerConfig) error {
	si, ok := standin.Lookup(cfg.StandIn)
	if !ok {
		return fmt.Errorf("klab has no stand-in for %q", cfg.StandIn)
	}
	config.Image = r.cfg.AppImage + ":latest"
	config.Cmd = nil
	p := si.Process(cfg.Command, cfg.Args)
	switch {
	case p.Web:
		config.Entrypoint = strslice.StrSlice(append(slices.Clone(r.cfg.AppEntrypoint), "--stand-in="+si.Name))
	case len(p.Argv) == 0:
		return fmt.Errorf("no command given and image %s has no entrypoint", cfg.Image)
	default:
		config.Entrypoint = strslice.StrSlice(p.Argv)
	}
	config.Labels[labels.StandIn] = si.Name
	config.Labels[labels.Image] = cfg.Image
	return nil
}
